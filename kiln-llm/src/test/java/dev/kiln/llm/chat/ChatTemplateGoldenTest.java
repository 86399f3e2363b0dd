package dev.kiln.llm.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Chat templates rendered byte for byte as transformers renders them: the references of
 * {@code tools/golden/gen_chat_templates.py} (transformers' render_jinja_template over jinja2) in
 * {@code src/test/resources/chat/}.
 */
class ChatTemplateGoldenTest {
    static final List<String> TEMPLATES = List.of("llama2", "llama3", "llama31", "mistral", "qwen25", "smollm2", "whitespace", "methods");

    static JsonNode reference(String name) throws IOException {
        try (InputStream in = ChatTemplateGoldenTest.class.getResourceAsStream("/chat/" + name + ".json")) {
            assertThat(in).as("resource chat/%s.json", name).isNotNull();
            return new ObjectMapper().readTree(in);
        }
    }

    static List<ChatMessage> messages(JsonNode array) {
        List<ChatMessage> list = new ArrayList<>();
        for (JsonNode m : array) list.add(new ChatMessage(m.get("role").asText(), m.get("content").asText()));
        return list;
    }

    @TestFactory
    List<DynamicTest> rendersAsTransformersDoes() throws IOException {
        List<DynamicTest> tests = new ArrayList<>();
        for (String name : TEMPLATES) {
            JsonNode ref = reference(name);
            ChatTemplate t = ChatTemplate.of(ref.get("template").asText(), ref.get("bos_token").asText(), ref.get("eos_token").asText());
            for (JsonNode c : ref.get("cases")) {
                List<ChatMessage> messages = messages(c.get("messages"));
                boolean agp = c.get("add_generation_prompt").asBoolean();
                tests.add(DynamicTest.dynamicTest(name + " " + c.get("name").asText(), () -> {
                    if (c.has("error")) {
                        assertThatThrownBy(() -> t.render(messages, agp)).isInstanceOfSatisfying(ChatTemplateException.class, e -> {
                            assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.RAISED);
                            assertThat(e.getMessage()).isEqualTo("chat template: " + c.get("error").asText());
                        });
                    } else {
                        assertThat(t.render(messages, agp)).isEqualTo(c.get("expected").asText());
                    }
                }));
            }
        }
        return tests;
    }
}
