package dev.kiln.llm.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.chat.ChatMessage;
import dev.kiln.llm.chat.ChatTemplate;
import dev.kiln.llm.chat.ChatTemplateException;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.SamplingOptions;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * Reads and checks a {@code /v1/chat/completions} or {@code /v1/completions} body into a {@link Request}: OpenAI's
 * field names, types, ranges and defaults, every refusal a 400 naming its {@code param}.
 *
 * <p>Supported: {@code model} (required; must be the served model's name, else 404), {@code messages} (roles system,
 * developer (as system), user and assistant; content a string or text parts) or {@code prompt} (a string, one string
 * in an array, or token ids), {@code max_tokens} / {@code max_completion_tokens}, {@code temperature} [0, 2],
 * {@code top_p} (0, 1], {@code seed}, {@code stop} (a string or an array of strings), {@code presence_penalty}
 * [-2, 2], {@code n} (1 only), {@code stream}, {@code stream_options.include_usage}; and llama.cpp's extensions
 * {@code top_k}, {@code min_p}, {@code repetition_penalty}, {@code ignore_eos}.
 *
 * <p>Refused rather than ignored, since Kiln cannot honour them: a non-zero {@code frequency_penalty} (Kiln has
 * presence and repetition penalties, no frequency penalty), {@code n} other than 1, {@code logprobs},
 * {@code logit_bias}, tools and function calls, a {@code response_format} other than text, {@code echo},
 * {@code suffix}, {@code best_of} other than 1, and any field OpenAI does not define ("Unrecognized request argument").
 * Ignored, since they do not change the output: {@code user}, {@code store}, {@code metadata},
 * {@code service_tier}, {@code parallel_tool_calls}.
 *
 * <p>Kiln's presence penalty looks at the last 64 tokens, the prompt's included, where OpenAI's looks at the text
 * generated so far.
 */
final class Requests {
    private Requests() {}

    static final ObjectMapper JSON = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    /** A checked request: the prompt's token ids and the generation's options. */
    record Request(boolean chat, int[] prompt, GenerationOptions options, boolean stream, boolean includeUsage) {}

    private static final Set<String> COMMON = Set.of("model", "max_tokens", "temperature", "top_p", "seed", "stop", "presence_penalty",
            "frequency_penalty", "n", "stream", "stream_options", "logprobs", "logit_bias", "user", "store", "metadata", "service_tier",
            "top_k", "min_p", "repetition_penalty", "ignore_eos");
    private static final Set<String> CHAT = Set.of("messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice", "functions",
            "function_call", "parallel_tool_calls", "response_format");
    private static final Set<String> COMPLETION = Set.of("prompt", "echo", "suffix", "best_of");

    /** The body's JSON object. */
    static JsonNode parse(byte[] body) {
        if (body.length == 0) throw ApiError.invalid("the request has no body: expected a JSON object", null);
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (JsonProcessingException e) {
            throw ApiError.invalid("could not parse the JSON body of the request: " + e.getOriginalMessage(), null);
        } catch (java.io.IOException e) {
            throw ApiError.invalid("could not read the JSON body of the request: " + e.getMessage(), null);
        }
        if (root == null || !root.isObject()) throw ApiError.invalid("expected a JSON object as the request body, got " + kind(root), null);
        return root;
    }

    /**
     * Checks {@code body} against {@code model}; {@code modelName} is the name it is served under.
     *
     * @throws ApiError 400 for a bad field, 404 for another model's name
     */
    static Request read(JsonNode body, boolean chat, LanguageModel model, String modelName, ServerOptions defaults) {
        for (Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
            String f = it.next();
            if (!COMMON.contains(f) && !(chat ? CHAT : COMPLETION).contains(f)) {
                throw ApiError.invalid("Unrecognized request argument supplied: " + f, f);
            }
        }
        JsonNode m = present(body, "model");
        if (m == null) throw ApiError.invalid("you must provide a model parameter (this server serves '" + modelName + "')", "model");
        if (!m.isTextual()) throw ApiError.invalid("'model': expected a string, got " + kind(m), "model");
        if (!m.textValue().equals(modelName)) {
            throw ApiError.notFound("The model '" + m.textValue() + "' does not exist: this server serves '" + modelName + "'", "model_not_found");
        }

        // refused, not ignored
        JsonNode n = present(body, "n");
        if (n != null && !(n.isIntegralNumber() && n.asLong() == 1)) throw ApiError.unsupported("'n': only 1 choice per request is supported, got " + n, "n");
        double freq = number(body, "frequency_penalty", -2, 2, 0);
        if (freq != 0) {
            throw ApiError.unsupported("'frequency_penalty' is not supported (Kiln has presence_penalty and repetition_penalty); give 0 or leave it out, got "
                    + body.get("frequency_penalty"), "frequency_penalty");
        }
        JsonNode lp = present(body, "logprobs");
        if (lp != null && !(lp.isBoolean() && !lp.booleanValue())) throw ApiError.unsupported("'logprobs' is not supported; give false or leave it out", "logprobs");
        JsonNode bias = present(body, "logit_bias");
        if (bias != null && !(bias.isObject() && bias.isEmpty())) throw ApiError.unsupported("'logit_bias' is not supported; leave it out", "logit_bias");
        if (chat) {
            JsonNode tl = present(body, "top_logprobs");
            if (tl != null && !(tl.isIntegralNumber() && tl.asLong() == 0)) throw ApiError.unsupported("'top_logprobs' is not supported", "top_logprobs");
            for (String f : List.of("tools", "functions")) {
                JsonNode t = present(body, f);
                if (t != null && !(t.isArray() && t.isEmpty())) throw ApiError.unsupported("'" + f + "': tool and function calls are not supported", f);
            }
            for (String f : List.of("tool_choice", "function_call")) {
                JsonNode t = present(body, f);
                if (t != null && !(t.isTextual() && (t.textValue().equals("none") || t.textValue().equals("auto")))) {
                    throw ApiError.unsupported("'" + f + "': tool and function calls are not supported", f);
                }
            }
            JsonNode rf = present(body, "response_format");
            if (rf != null && !(rf.isObject() && rf.path("type").asText("").equals("text"))) {
                throw ApiError.unsupported("'response_format': only {\"type\": \"text\"} is supported, got " + rf, "response_format");
            }
        } else {
            JsonNode echo = present(body, "echo");
            if (echo != null && !(echo.isBoolean() && !echo.booleanValue())) throw ApiError.unsupported("'echo' is not supported; give false or leave it out", "echo");
            JsonNode suffix = present(body, "suffix");
            if (suffix != null && !(suffix.isTextual() && suffix.textValue().isEmpty())) throw ApiError.unsupported("'suffix' is not supported", "suffix");
            JsonNode bestOf = present(body, "best_of");
            if (bestOf != null && !(bestOf.isIntegralNumber() && bestOf.asLong() == 1)) throw ApiError.unsupported("'best_of': only 1 is supported", "best_of");
        }

        // the generation's options
        SamplingOptions s = defaults.sampling();
        if (present(body, "temperature") != null) s = s.withTemperature(number(body, "temperature", 0, 2, 1));
        if (present(body, "top_p") != null) {
            double p = number(body, "top_p", 0, 1, 1);
            if (p == 0) throw ApiError.invalidValue("'top_p': expected a number in (0, 1], got 0", "top_p");
            s = s.withTopP(p);
        }
        if (present(body, "presence_penalty") != null) s = s.withPresencePenalty(number(body, "presence_penalty", -2, 2, 0));
        if (present(body, "top_k") != null) s = s.withTopK((int) integer(body, "top_k", 0, Integer.MAX_VALUE, 0));
        if (present(body, "min_p") != null) s = s.withMinP(number(body, "min_p", 0, 1, 0));
        if (present(body, "repetition_penalty") != null) {
            double r = number(body, "repetition_penalty", 0, Double.MAX_VALUE, 1);
            if (r == 0) throw ApiError.invalidValue("'repetition_penalty': expected a number > 0 (1 = off), got 0", "repetition_penalty");
            s = s.withRepetitionPenalty(r);
        }
        if (present(body, "seed") != null) s = s.withSeed(integer(body, "seed", Long.MIN_VALUE, Long.MAX_VALUE, 0));
        int maxTokens = maxTokens(body, chat);
        List<String> stop = stop(body, defaults.stop());
        boolean ignoreEos = bool(body, "ignore_eos");
        boolean stream = bool(body, "stream");
        boolean includeUsage = false;
        JsonNode so = present(body, "stream_options");
        if (so != null) {
            if (!stream) throw ApiError.invalid("'stream_options' is only allowed when 'stream' is true", "stream_options");
            if (!so.isObject()) throw ApiError.invalid("'stream_options': expected an object, got " + kind(so), "stream_options");
            for (Iterator<String> it = so.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (!f.equals("include_usage") && !f.equals("include_obfuscation")) {
                    throw ApiError.invalid("Unrecognized request argument supplied: stream_options." + f, "stream_options." + f);
                }
            }
            includeUsage = bool(so, "include_usage");
        }
        GenerationOptions options = new GenerationOptions(maxTokens, stop, ignoreEos, s);

        int[] prompt = chat ? chatPrompt(body, model, modelName) : completionPrompt(body, model);
        checkContext(prompt.length, maxTokens, model.contextLength(), chat ? "messages" : "prompt");
        return new Request(chat, prompt, options, stream, includeUsage);
    }

    /** 0 (up to the context) when absent, as OpenAI's chat API; 16 for completions, as OpenAI's legacy API. */
    private static int maxTokens(JsonNode body, boolean chat) {
        long a = present(body, "max_tokens") != null ? integer(body, "max_tokens", 1, Integer.MAX_VALUE, 0) : -1;
        long b = chat && present(body, "max_completion_tokens") != null ? integer(body, "max_completion_tokens", 1, Integer.MAX_VALUE, 0) : -1;
        if (a >= 0 && b >= 0 && a != b) {
            throw ApiError.invalid("'max_tokens' (" + a + ") and 'max_completion_tokens' (" + b + ") disagree; give one of them", "max_completion_tokens");
        }
        long v = Math.max(a, b);
        return v >= 0 ? (int) v : chat ? 0 : 16;
    }

    private static List<String> stop(JsonNode body, List<String> fallback) {
        JsonNode st = present(body, "stop");
        if (st == null) return fallback;
        List<String> out = new ArrayList<>();
        if (st.isTextual()) out.add(st.textValue());
        else if (st.isArray()) {
            for (JsonNode e : st) {
                if (!e.isTextual()) throw ApiError.invalid("'stop': expected a string or an array of strings, got an array holding " + kind(e), "stop");
                out.add(e.textValue());
            }
        } else throw ApiError.invalid("'stop': expected a string or an array of strings, got " + kind(st), "stop");
        for (String s : out) if (s.isEmpty()) throw ApiError.invalidValue("'stop': stop strings must not be empty", "stop");
        return out;
    }

    private static int[] chatPrompt(JsonNode body, LanguageModel model, String modelName) {
        JsonNode ms = present(body, "messages");
        if (ms == null) throw ApiError.invalid("Missing required parameter: 'messages'", "messages");
        if (!ms.isArray()) throw ApiError.invalid("'messages': expected an array, got " + kind(ms), "messages");
        if (ms.isEmpty()) throw ApiError.invalid("'messages': expected at least one message, got an empty array", "messages");
        List<ChatMessage> messages = new ArrayList<>();
        for (int i = 0; i < ms.size(); i++) {
            JsonNode msg = ms.get(i);
            String p = "messages[" + i + "]";
            if (!msg.isObject()) throw ApiError.invalid("'" + p + "': expected an object, got " + kind(msg), p);
            for (Iterator<String> it = msg.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                if (f.equals("tool_calls") || f.equals("function_call") || f.equals("tool_call_id")) {
                    throw ApiError.unsupported("'" + p + "." + f + "': tool and function calls are not supported", p + "." + f);
                }
                if (f.equals("name")) throw ApiError.unsupported("'" + p + ".name': participant names are not supported", p + ".name");
                if (!f.equals("role") && !f.equals("content")) throw ApiError.invalid("Unrecognized request argument supplied: " + p + "." + f, p + "." + f);
            }
            JsonNode role = msg.get("role");
            if (role == null || !role.isTextual()) throw ApiError.invalid("'" + p + ".role': expected a string, got " + kind(role), p + ".role");
            String r = switch (role.textValue()) {
                case "system", "developer" -> "system";
                case "user" -> "user";
                case "assistant" -> "assistant";
                case "tool", "function" -> throw ApiError.unsupported("'" + p + ".role': tool and function messages are not supported", p + ".role");
                default -> throw ApiError.invalidValue("'" + p + ".role': expected one of system, developer, user, assistant; got '" + role.textValue() + "'",
                        p + ".role");
            };
            messages.add(new ChatMessage(r, content(msg.get("content"), p + ".content")));
        }
        ChatTemplate template;
        try {
            template = model.chatTemplate();
        } catch (ChatTemplateException e) {
            String why = e.kind() == ChatTemplateException.Kind.MISSING
                    ? "the model '" + modelName + "' has no chat template (tokenizer.chat_template in a GGUF file, chat_template in tokenizer_config.json),"
                    + " so chat messages cannot be formatted for it; use /v1/completions with a prompt"
                    : "the model '" + modelName + "' has a chat template that cannot be used: " + e.getMessage();
            throw new ApiError(400, ApiError.INVALID_REQUEST, why, "messages", "chat_template_unavailable");
        }
        try {
            return model.encodeChat(template, messages);
        } catch (ChatTemplateException e) {
            throw ApiError.invalid("the model's chat template refused the messages: " + e.getMessage(), "messages");
        }
    }

    private static String content(JsonNode c, String p) {
        if (c == null || c.isNull()) return "";
        if (c.isTextual()) return c.textValue();
        if (c.isArray()) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < c.size(); i++) {
                JsonNode part = c.get(i);
                String type = part.path("type").asText("");
                if (!type.equals("text")) {
                    throw ApiError.unsupported("'" + p + "[" + i + "]': only text content parts are supported, got type '" + type + "'", p + "[" + i + "]");
                }
                JsonNode t = part.get("text");
                if (t == null || !t.isTextual()) throw ApiError.invalid("'" + p + "[" + i + "].text': expected a string, got " + kind(t), p + "[" + i + "].text");
                sb.append(t.textValue());
            }
            return sb.toString();
        }
        throw ApiError.invalid("'" + p + "': expected a string or an array of content parts, got " + kind(c), p);
    }

    private static int[] completionPrompt(JsonNode body, LanguageModel model) {
        JsonNode p = present(body, "prompt");
        if (p == null) throw ApiError.invalid("Missing required parameter: 'prompt'", "prompt");
        if (p.isArray() && p.size() == 1 && p.get(0).isTextual()) p = p.get(0);
        if (p.isTextual()) {
            if (p.textValue().isEmpty()) throw ApiError.invalidValue("'prompt': expected some text, got an empty string", "prompt");
            return model.encode(p.textValue());
        }
        if (p.isArray() && !p.isEmpty() && p.get(0).isIntegralNumber()) {
            int vocab = model.tokenizer().vocabularySize();
            int[] ids = new int[p.size()];
            for (int i = 0; i < ids.length; i++) {
                JsonNode e = p.get(i);
                if (!e.isIntegralNumber() || e.asLong() < 0 || e.asLong() >= vocab) {
                    throw ApiError.invalidValue("'prompt': expected token ids in [0, " + vocab + "), got " + e + " at " + i, "prompt");
                }
                ids[i] = e.intValue();
            }
            return ids;
        }
        if (p.isArray() && p.size() > 1) throw ApiError.unsupported("'prompt': only one prompt per request is supported, got " + p.size(), "prompt");
        throw ApiError.invalid("'prompt': expected a string or an array of token ids, got " + kind(p), "prompt");
    }

    /** OpenAI's refusal of a request that does not fit the context, before anything runs. */
    static void checkContext(int promptTokens, int maxTokens, int context, String param) {
        if (promptTokens > context || (maxTokens > 0 && (long) promptTokens + maxTokens > context)) {
            String what = param.equals("messages") ? "messages" : "prompt";
            String msg = "This model's maximum context length is " + context + " tokens. However, you requested " + ((long) promptTokens + maxTokens)
                    + " tokens (" + promptTokens + " in the " + what + ", " + maxTokens + " in the completion). Please reduce the length of the "
                    + what + " or completion.";
            if (maxTokens == 0) {
                msg = "This model's maximum context length is " + context + " tokens. However, your " + what + " resulted in " + promptTokens
                        + " tokens. Please reduce the length of the " + what + ".";
            }
            throw new ApiError(400, ApiError.INVALID_REQUEST, msg, param, "context_length_exceeded");
        }
    }

    /** The field, or null when absent or JSON null (OpenAI takes null as "not given"). */
    private static JsonNode present(JsonNode o, String f) {
        JsonNode v = o.get(f);
        return v == null || v.isNull() ? null : v;
    }

    private static double number(JsonNode o, String f, double min, double max, double absent) {
        JsonNode v = present(o, f);
        if (v == null) return absent;
        if (!v.isNumber()) throw ApiError.invalid("'" + f + "': expected a number, got " + kind(v), f);
        double d = v.doubleValue();
        if (!(d >= min && d <= max)) {
            throw ApiError.invalidValue("'" + f + "': expected a number in [" + fmt(min) + ", " + fmt(max) + "], got " + v, f);
        }
        return d;
    }

    private static long integer(JsonNode o, String f, long min, long max, long absent) {
        JsonNode v = present(o, f);
        if (v == null) return absent;
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            if (v.isNumber() && v.doubleValue() == Math.rint(v.doubleValue()) && Math.abs(v.doubleValue()) < 1e15) return check(f, (long) v.doubleValue(), min, max, v);
            throw ApiError.invalid("'" + f + "': expected an integer, got " + kind(v), f);
        }
        return check(f, v.longValue(), min, max, v);
    }

    private static long check(String f, long x, long min, long max, JsonNode v) {
        if (x < min || x > max) {
            String range = max == Integer.MAX_VALUE || max == Long.MAX_VALUE ? ">= " + min : "in [" + min + ", " + max + "]";
            throw ApiError.invalidValue("'" + f + "': expected an integer " + range + ", got " + v, f);
        }
        return x;
    }

    private static boolean bool(JsonNode o, String f) {
        JsonNode v = present(o, f);
        if (v == null) return false;
        if (!v.isBoolean()) throw ApiError.invalid("'" + f + "': expected true or false, got " + kind(v), f);
        return v.booleanValue();
    }

    private static String fmt(double d) {
        return d == Double.MAX_VALUE ? "inf" : d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }

    /** How a value is described in a message: its JSON type, with a short value. */
    static String kind(JsonNode v) {
        if (v == null || v.isMissingNode()) return "nothing";
        if (v.isNull()) return "null";
        String text = v.toString();
        if (text.length() > 40) text = text.substring(0, 40) + "...";
        String type = v.isTextual() ? "a string" : v.isNumber() ? "a number" : v.isBoolean() ? "a boolean" : v.isArray() ? "an array" : "an object";
        return type + " (" + text + ")";
    }
}
