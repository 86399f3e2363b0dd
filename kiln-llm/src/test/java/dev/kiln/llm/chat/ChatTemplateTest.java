package dev.kiln.llm.chat;

import dev.kiln.llm.tokenizer.Tokenizer;
import dev.kiln.llm.model.LlmFixtures;
import org.junit.jupiter.api.Test;

import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** ChatTemplate's errors, helpers and fallback. */
class ChatTemplateTest {
    static final List<ChatMessage> HELLO = List.of(ChatMessage.user("Hello"));

    static ChatTemplate t(String source) { return ChatTemplate.of(source, "<s>", "</s>"); }

    @Test
    void aSyntaxErrorIsTypedAndSaysWhere() {
        assertThatThrownBy(() -> t("{% for m in messages %}{{ m['content'] }}"))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.SYNTAX))
                .hasMessageStartingWith("chat template: ");
        assertThatThrownBy(() -> t("{{ messages[0]['content'] + }}").render(HELLO, true)).isInstanceOf(ChatTemplateException.class)
                .hasMessageStartingWith("chat template: ");
    }

    @Test
    void anUnknownFilterOrTagIsUnsupportedNotSilentlyEmpty() {
        assertThatThrownBy(() -> t("{{ messages[0]['content'] | no_such_filter }}").render(HELLO, true))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.kind()).isIn(ChatTemplateException.Kind.UNSUPPORTED,
                        ChatTemplateException.Kind.SYNTAX))
                .hasMessageContaining("no_such_filter");
        assertThatThrownBy(() -> t("{% if messages[0] is no_such_test %}x{% endif %}"))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.UNSUPPORTED))
                .hasMessage("chat template: unsupported feature: the test 'no_such_test'");
        assertThat(t("{{ '|not_a_filter is not_a_test' }}").render(HELLO, true)).as("inside a string literal").isEqualTo("|not_a_filter is not_a_test");
        assertThatThrownBy(() -> t("{{ messages[0].content.casefold() }}").render(HELLO, true))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.UNSUPPORTED))
                .hasMessageContaining("casefold");
        assertThatThrownBy(() -> t("{% generation %}x{% endgeneration %}").render(HELLO, true))
                .isInstanceOf(ChatTemplateException.class).hasMessageContaining("generation");
    }

    @Test
    void raiseExceptionIsTypedWithTheTemplatesMessage() {
        assertThatThrownBy(() -> t("{% if messages[0]['role'] != 'system' %}{{ raise_exception('need a system message: ' + messages[0]['role']) }}{% endif %}")
                .render(HELLO, true))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.RAISED))
                .hasMessage("chat template: need a system message: user");
    }

    @Test
    void variablesAndHelpers() {
        assertThat(t("{{ bos_token }}|{{ eos_token }}|{% if add_generation_prompt %}agp{% endif %}|{% if tools is none %}no tools{% endif %}|{{ messages | length }}").render(HELLO, false))
                .isEqualTo("<s>|</s>||no tools|1");
        String today = LocalDate.now().format(DateTimeFormatter.ofPattern("dd MMM yyyy", Locale.ENGLISH));
        String rendered = t("{{ strftime_now('%d %b %Y') }}").render(HELLO, true);
        String after = LocalDate.now().format(DateTimeFormatter.ofPattern("dd MMM yyyy", Locale.ENGLISH));
        assertThat(rendered).isIn(today, after);
        assertThat(t("{{ {'b': [1, 2.5, none, true], 'a': 'é\"\\n'} | tojson }}").render(HELLO, true))
                .isEqualTo("{\"b\": [1, 2.5, null, true], \"a\": \"é\\\"\\n\"}");
        assertThat(t("{{ {'b': 1, 'a': [2]} | tojson(indent=2, sort_keys=true) }}").render(HELLO, true))
                .isEqualTo("{\n  \"a\": [\n    2\n  ],\n  \"b\": 1\n}");
        assertThat(t("[{{ '\u00a0 x \u3000' | trim }}]").render(HELLO, true)).isEqualTo("[x]");
        assertThat(t("{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}{{ m.content }}{% endfor %}")
                .render(List.of(ChatMessage.user("a"), ChatMessage.user("b")), true)).isEqualTo("b");
    }

    @Test
    void noTemplateIsAnErrorUnlessTheChatMlFallbackIsAskedFor() {
        Tokenizer withTemplate = Tokenizer.fromTokenizerJson(LlmFixtures.root().resolve("qwen2/hf/tokenizer.json"));
        assertThat(withTemplate.chatTemplate()).isPresent();
        assertThat(ChatTemplate.forTokenizer(withTemplate).render(HELLO, true)).isEqualTo("<|im_start|>user\nHello<|im_end|>\n");
        assertThat(ChatTemplate.of(ChatTemplate.CHATML, "", "").render(List.of(ChatMessage.system("S"), ChatMessage.user("U")), true))
                .isEqualTo("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
    }

    @Test
    void theMessageRecordChecksItsFields() {
        assertThatThrownBy(() -> new ChatMessage("", "x")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ChatMessage("user", null)).isInstanceOf(NullPointerException.class);
    }
}
