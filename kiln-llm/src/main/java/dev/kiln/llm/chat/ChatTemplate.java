package dev.kiln.llm.chat;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.lib.filter.Filter;
import dev.kiln.llm.tokenizer.SpecialTokens;
import dev.kiln.llm.tokenizer.Tokenizer;

import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A model's chat template: the Jinja source its files carry, rendered over a conversation into the prompt text the
 * model was trained on, as transformers' {@code apply_chat_template} renders it.
 *
 * <p>The environment is transformers': Python jinja2 semantics with {@code trim_blocks} and {@code lstrip_blocks},
 * natural operator precedence ({@code a + b | trim} trims {@code b}), and the variables {@code messages} (a list of
 * {@code {"role", "content"}} mappings), {@code add_generation_prompt}, {@code bos_token}, {@code eos_token} and
 * {@code tools} (always none: tool calling is not supported), the functions {@code raise_exception(message)} (which
 * throws a {@link ChatTemplateException} of kind {@link ChatTemplateException.Kind#RAISED}) and
 * {@code strftime_now(format)} (the local time, English names), and the filters {@code tojson} (Python's
 * {@code json.dumps}: {@code ensure_ascii=False}, {@code indent}, {@code separators}, {@code sort_keys}) and
 * {@code trim} (Python's {@code str.strip}). Strings also answer Python's {@code .startswith()}, {@code .endswith()},
 * {@code .lstrip()}, {@code .rstrip()}, {@code .upper()}, {@code .lower()}, {@code .title()} and {@code .capitalize()}
 * (rewritten to filters before parsing, see {@link PythonMethods}), and Java's {@code .strip()}, {@code .split()} and
 * {@code .replace()}; other Python methods are an error of kind {@link ChatTemplateException.Kind#UNSUPPORTED}.
 *
 * <p>Known differences from jinja2: a boolean or none printed directly renders as {@code true}/{@code false}/nothing,
 * not {@code True}/{@code False}/{@code None} (chat templates test them, they do not print them).
 *
 * <p>Templates render on the calling thread; one {@code ChatTemplate} may be used from several threads.
 */
public final class ChatTemplate {
    /**
     * The format used by {@link #forTokenizer(Tokenizer, boolean)} when a model has no template and the caller asks
     * for a fallback: ChatML ({@code <|im_start|>role\ncontent<|im_end|>\n} per message, then
     * {@code <|im_start|>assistant\n} when a reply is wanted), the format llama.cpp falls back to as well. A model not
     * trained on it will answer poorly, which is why the fallback is never taken silently.
     */
    public static final String CHATML = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
            + " + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

    private static final Jinjava JINJAVA = newJinjava();

    private final String source;
    private final String prepared;
    private final String bosToken;
    private final String eosToken;

    private ChatTemplate(String source, String bosToken, String eosToken) {
        this.source = source;
        this.prepared = PythonMethods.rewrite(source);
        this.bosToken = bosToken;
        this.eosToken = eosToken;
        check();
    }

    /**
     * The template {@code source} with the given {@code bos_token} and {@code eos_token} texts.
     *
     * @throws ChatTemplateException of kind {@link ChatTemplateException.Kind#SYNTAX SYNTAX} or
     *                               {@link ChatTemplateException.Kind#UNSUPPORTED UNSUPPORTED} if it does not parse
     */
    public static ChatTemplate of(String source, String bosToken, String eosToken) {
        Objects.requireNonNull(source, "source");
        return new ChatTemplate(source, bosToken == null ? "" : bosToken, eosToken == null ? "" : eosToken);
    }

    /**
     * The tokenizer's template with its BOS and EOS texts.
     *
     * @throws ChatTemplateException of kind {@link ChatTemplateException.Kind#MISSING MISSING} if the model's files hold
     *                               no template
     */
    public static ChatTemplate forTokenizer(Tokenizer tokenizer) { return forTokenizer(tokenizer, false); }

    /**
     * The tokenizer's template with its BOS and EOS texts; if it has none, {@link #CHATML} when {@code chatMlFallback},
     * else an error of kind {@link ChatTemplateException.Kind#MISSING MISSING}.
     */
    public static ChatTemplate forTokenizer(Tokenizer tokenizer, boolean chatMlFallback) {
        SpecialTokens s = tokenizer.specialTokens();
        String bos = s.hasBos() ? tokenizer.tokenText(s.bos()) : "";
        String eos = s.hasEos() ? tokenizer.tokenText(s.eos()) : "";
        String source = tokenizer.chatTemplate().orElse(null);
        if (source == null) {
            if (!chatMlFallback) {
                throw new ChatTemplateException(ChatTemplateException.Kind.MISSING,
                        "the model has no chat template (tokenizer.chat_template in GGUF, chat_template in tokenizer_config.json);"
                                + " ask for the ChatML fallback explicitly, or use plain generation");
            }
            source = CHATML;
        }
        return of(source, bos, eos);
    }

    /** The Jinja source as given. */
    public String source() { return source; }

    /**
     * The prompt text for {@code messages}; with {@code addGenerationPrompt} it ends with the header of the assistant's
     * next turn.
     *
     * @throws ChatTemplateException of kind {@link ChatTemplateException.Kind#RAISED RAISED} if the template refuses
     *                               the conversation, {@link ChatTemplateException.Kind#UNSUPPORTED UNSUPPORTED} or
     *                               {@link ChatTemplateException.Kind#RENDER RENDER} if it cannot be rendered
     */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        Objects.requireNonNull(messages, "messages");
        List<Map<String, Object>> list = new ArrayList<>(messages.size());
        for (ChatMessage m : messages) {
            Map<String, Object> map = new LinkedHashMap<>();
            map.put("role", m.role());
            map.put("content", m.content());
            list.add(map);
        }
        Map<String, Object> vars = new HashMap<>();
        vars.put("messages", list);
        vars.put("add_generation_prompt", addGenerationPrompt);
        vars.put("bos_token", bosToken);
        vars.put("eos_token", eosToken);
        vars.put("tools", null);
        vars.put("documents", null);
        RenderResult r;
        try {
            r = JINJAVA.renderForResult(prepared, vars);
        } catch (RaisedException e) {
            throw raised(e);
        } catch (RuntimeException e) {
            RaisedException raised = find(e);
            if (raised != null) throw raised(raised);
            throw new ChatTemplateException(ChatTemplateException.Kind.RENDER, "chat template: " + e.getMessage(), e);
        }
        for (TemplateError e : r.getErrors()) {
            RaisedException raised = find(e.getException());
            if (raised != null) throw raised(raised);
        }
        for (TemplateError e : r.getErrors()) {
            if (e.getSeverity() == TemplateError.ErrorType.FATAL) throw error(e, false);
        }
        for (TemplateError e : r.getErrors()) {
            if (isUnsupported(e)) throw error(e, false);
        }
        return r.getOutput();
    }

    private void check() {
        JinjavaInterpreter interpreter = JINJAVA.newInterpreter();
        try {
            interpreter.parse(prepared);
        } catch (RuntimeException e) {
            throw new ChatTemplateException(ChatTemplateException.Kind.SYNTAX, "chat template: syntax error: " + e.getMessage(), e);
        }
        for (TemplateError e : interpreter.getErrors()) {
            if (e.getSeverity() == TemplateError.ErrorType.FATAL || isUnsupported(e)) throw error(e, true);
        }
        // Jinjava renders an unknown filter or test as nothing, silently: name them here instead
        for (String name : TemplateScan.filters(prepared)) {
            if (JINJAVA.getGlobalContext().getFilter(name) == null) {
                throw new ChatTemplateException(ChatTemplateException.Kind.UNSUPPORTED, "chat template: unsupported feature: the filter '" + name + "'");
            }
        }
        for (String name : TemplateScan.tests(prepared)) {
            if (JINJAVA.getGlobalContext().getExpTest(name) == null) {
                throw new ChatTemplateException(ChatTemplateException.Kind.UNSUPPORTED, "chat template: unsupported feature: the test '" + name + "'");
            }
        }
    }

    private static boolean isUnsupported(TemplateError e) {
        return switch (e.getReason()) {
            case UNKNOWN, DISABLED, MISSING -> e.getItem() != null && e.getItem() != TemplateError.ErrorItem.PROPERTY;
            default -> false;
        };
    }

    private static ChatTemplateException error(TemplateError e, boolean parsing) {
        String where = e.getLineno() > 0 ? " (line " + e.getLineno() + (e.getStartPosition() > 0 ? ", column " + e.getStartPosition() : "") + ")" : "";
        boolean unknownTag = e.getMessage() != null && (e.getMessage().contains("Unknown tag") || e.getMessage().contains("Cannot find method"));
        ChatTemplateException.Kind kind = isUnsupported(e) || unknownTag ? ChatTemplateException.Kind.UNSUPPORTED
                : e.getReason() == TemplateError.ErrorReason.SYNTAX_ERROR || parsing ? ChatTemplateException.Kind.SYNTAX
                : ChatTemplateException.Kind.RENDER;
        String what = switch (kind) {
            case UNSUPPORTED -> "unsupported feature: ";
            case SYNTAX -> "syntax error: ";
            default -> "";
        };
        return new ChatTemplateException(kind, "chat template: " + what + e.getMessage() + where, e.getException());
    }

    private static ChatTemplateException raised(RaisedException e) {
        return new ChatTemplateException(ChatTemplateException.Kind.RAISED, "chat template: " + e.getMessage());
    }

    private static RaisedException find(Throwable t) {
        for (int i = 0; t != null && i < 32; i++, t = t.getCause()) {
            if (t instanceof RaisedException r) return r;
        }
        return null;
    }

    private static Jinjava newJinjava() {
        LegacyOverrides python = LegacyOverrides.newBuilder()
                .withUseNaturalOperatorPrecedence(true)
                .withParseWhitespaceControlStrictly(true)
                .withUseTrimmingForNotesAndExpressions(true)
                .withEvaluateMapKeys(true)
                .withIterateOverMapKeys(true)
                .withUsePyishObjectMapper(true)
                .withKeepNullableLoopValues(true)
                .withAllowAdjacentTextNodes(true)
                .build();
        JinjavaConfig config = JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                .withLstripBlocks(true)
                .withNestedInterpretationEnabled(false)
                .withFailOnUnknownTokens(false)
                .withLegacyOverrides(python)
                .build();
        Jinjava j = new Jinjava(config);
        j.getGlobalContext().registerFunction(new ELFunctionDefinition("", "raise_exception", ChatTemplate.class, "raiseException", Object.class));
        j.getGlobalContext().registerFunction(new ELFunctionDefinition("", "strftime_now", ChatTemplate.class, "strftimeNow", Object.class));
        for (Filter f : PythonFilters.all()) j.getGlobalContext().registerFilter(f);
        for (Filter f : PythonMethods.filters()) j.getGlobalContext().registerFilter(f);
        return j;
    }

    /** {@code raise_exception(message)}: the template refuses the conversation. */
    public static Object raiseException(Object message) { throw new RaisedException(String.valueOf(message)); }

    /** {@code strftime_now(format)}: the local time in Python's strftime format. */
    public static String strftimeNow(Object format) { return Strftime.format(ZonedDateTime.now(), String.valueOf(format)); }

    /** Thrown by {@code raise_exception}, turned into a {@link ChatTemplateException} by {@link #render}. */
    static final class RaisedException extends RuntimeException {
        @java.io.Serial
        private static final long serialVersionUID = 1L;

        RaisedException(String message) { super(message, null, false, false); }
    }

    @Override
    public String toString() { return "ChatTemplate[" + source.length() + " chars]"; }
}
