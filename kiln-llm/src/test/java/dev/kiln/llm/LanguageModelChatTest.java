package dev.kiln.llm;

import dev.kiln.llm.chat.ChatMessage;
import dev.kiln.llm.chat.ChatTemplate;
import dev.kiln.llm.chat.ChatTemplateException;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import dev.kiln.llm.generate.TokenStream;
import dev.kiln.llm.model.LlmFixtures;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link LanguageModel#chat}: the template rendered, encoded with its control tokens, generated until the end of the turn. */
class LanguageModelChatTest {
    static final List<ChatMessage> CONVERSATION = List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hello there"));

    @Test
    void chatRendersTheTemplateEncodesItsControlTokensAndGeneratesAsStreamDoes() {
        LanguageModel m = LlmFixtures.open(LlmFixtures.CASES.getFirst()); // llama hf: a Llama 3 style template
        String rendered = m.chatTemplate().render(CONVERSATION, true);
        assertThat(rendered).isEqualTo("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                + "<|start_header_id|>user<|end_header_id|>\n\nHello there<|eot_id|>");
        int[] ids = m.encodeChat(m.chatTemplate(), CONVERSATION);
        int bos = m.tokenizer().specialTokens().bos(), eot = m.tokenizer().specialTokens().eot();
        assertThat(ids[0]).as("the template's BOS, once").isEqualTo(bos);
        assertThat(ids[1]).isNotEqualTo(bos);
        assertThat(ids).contains(eot);

        GenerationOptions greedy = GenerationOptions.greedy().withMaxTokens(12).withIgnoreEos(true);
        List<String> streamed = new ArrayList<>();
        GenerationResult r = m.chat(CONVERSATION, greedy, t -> streamed.add(t.text()));
        GenerationResult want;
        try (TokenStream s = m.stream(ids, greedy.withIgnoreEos(false))) {
            want = s.drain(t -> {});
        }
        assertThat(r.tokens()).isEqualTo(want.tokens());
        assertThat(r.text()).isEqualTo(want.text()).isEqualTo(String.join("", streamed));
        for (int t : r.tokens()) assertThat(m.tokenizer().isEndOfGeneration(t)).as("no end-of-turn token generated past").isFalse();
        assertThat(r.stats().promptTokens()).isEqualTo(ids.length);
    }

    @Test
    void aConversationTheTemplateRefusesRunsNothing() {
        LanguageModel m = LlmFixtures.open(LlmFixtures.CASES.get(3)); // mistral hf
        ChatTemplate strict = ChatTemplate.of("{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
                + "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{{ m['content'] }}{% endfor %}", "<s>", "</s>");
        assertThatThrownBy(() -> m.chat(strict, List.of(ChatMessage.user("a"), ChatMessage.user("b")), GenerationOptions.greedy().withMaxTokens(2), t -> {}))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.RAISED))
                .hasMessage("chat template: Conversation roles must alternate user/assistant/user/assistant/...");
    }
}
