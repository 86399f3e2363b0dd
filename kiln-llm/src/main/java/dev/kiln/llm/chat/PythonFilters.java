package dev.kiln.llm.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The filters whose Python behaviour Jinjava's own differ from: transformers' {@code tojson}, jinja2's {@code trim}. */
final class PythonFilters {
    private PythonFilters() {}

    static List<Filter> all() { return List.of(new ToJson(), new Trim()); }

    /** Python's {@code str.isspace} for one code point. */
    static boolean isPythonSpace(int cp) {
        return Character.isWhitespace(cp) || Character.isSpaceChar(cp) || cp == 0x85;
    }

    /** Python's {@code str.strip()}. */
    static String strip(String s) {
        int start = 0, end = s.length();
        while (start < end) {
            int cp = s.codePointAt(start);
            if (!isPythonSpace(cp)) break;
            start += Character.charCount(cp);
        }
        while (end > start) {
            int cp = s.codePointBefore(end);
            if (!isPythonSpace(cp)) break;
            end -= Character.charCount(cp);
        }
        return s.substring(start, end);
    }

    /** jinja2's {@code trim(value, chars=None)}. */
    static final class Trim implements Filter {
        @Override
        public String getName() { return "trim"; }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            if (var == null) return "None";
            String s = var.toString();
            if (args.length == 0 || args[0] == null) return strip(s);
            String chars = args[0];
            int start = 0, end = s.length();
            while (start < end && chars.indexOf(s.charAt(start)) >= 0) start++;
            while (end > start && chars.indexOf(s.charAt(end - 1)) >= 0) end--;
            return s.substring(start, end);
        }
    }

    /** transformers' {@code tojson}: {@code json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)}. */
    static final class ToJson implements Filter {
        @Override
        public String getName() { return "tojson"; }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            return filter(var, interpreter, (Object[]) args, Map.of());
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object indent = kwargs.containsKey("indent") ? kwargs.get("indent") : args.length > 0 ? args[0] : null;
            Object separators = kwargs.get("separators");
            boolean sortKeys = Boolean.TRUE.equals(kwargs.get("sort_keys"));
            String ind = null;
            if (indent instanceof Number n) ind = " ".repeat(Math.max(0, n.intValue()));
            else if (indent instanceof String s) ind = s;
            String item = ind == null ? ", " : ",", key = ": ";
            if (separators instanceof List<?> l && l.size() == 2) {
                item = String.valueOf(l.get(0));
                key = String.valueOf(l.get(1));
            }
            StringBuilder b = new StringBuilder();
            new Writer(b, ind, item, key, sortKeys).write(var, 0);
            return b.toString();
        }
    }

    private record Writer(StringBuilder b, String indent, String item, String key, boolean sortKeys) {
        void write(Object v, int level) {
            switch (v) {
                case null -> b.append("null");
                case Boolean x -> b.append(x ? "true" : "false");
                case Integer x -> b.append(x);
                case Long x -> b.append(x);
                case Short x -> b.append(x);
                case Byte x -> b.append(x);
                case BigInteger x -> b.append(x);
                case Double x -> number(x);
                case Float x -> number(x.doubleValue());
                case BigDecimal x -> number(x.doubleValue());
                case CharSequence s -> string(s.toString());
                case Map<?, ?> m -> map(m, level);
                case Collection<?> c -> list(new ArrayList<>(c), level);
                case Object[] a -> list(List.of(a), level);
                default -> string(v.toString());
            }
        }

        private void number(double d) {
            if (Double.isNaN(d)) b.append("NaN");
            else if (Double.isInfinite(d)) b.append(d > 0 ? "Infinity" : "-Infinity");
            else b.append(PythonRepr.ofDouble(d));
        }

        private void newline(int level) {
            if (indent == null) return;
            b.append('\n');
            b.append(indent.repeat(level));
        }

        private void map(Map<?, ?> m, int level) {
            if (m.isEmpty()) {
                b.append("{}");
                return;
            }
            Map<?, ?> entries = m;
            if (sortKeys) {
                TreeMap<String, Object> sorted = new TreeMap<>();
                m.forEach((k, v) -> sorted.put(String.valueOf(k), v));
                entries = sorted;
            }
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : entries.entrySet()) {
                if (!first) b.append(item);
                first = false;
                newline(level + 1);
                Object k = e.getKey();
                string(k instanceof CharSequence ? k.toString() : k instanceof Boolean x ? (x ? "true" : "false") : k == null ? "null" : String.valueOf(k));
                b.append(key);
                write(e.getValue(), level + 1);
            }
            newline(level);
            b.append('}');
        }

        private void list(List<?> l, int level) {
            if (l.isEmpty()) {
                b.append("[]");
                return;
            }
            b.append('[');
            for (int i = 0; i < l.size(); i++) {
                if (i > 0) b.append(item);
                newline(level + 1);
                write(l.get(i), level + 1);
            }
            newline(level);
            b.append(']');
        }

        private void string(String s) {
            b.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"' -> b.append("\\\"");
                    case '\\' -> b.append("\\\\");
                    case '\n' -> b.append("\\n");
                    case '\r' -> b.append("\\r");
                    case '\t' -> b.append("\\t");
                    case '\b' -> b.append("\\b");
                    case '\f' -> b.append("\\f");
                    default -> {
                        if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                        else b.append(c);
                    }
                }
            }
            b.append('"');
        }
    }
}
