package dev.kiln.llm.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;

import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Python string methods that templates call and Java's {@code String} lacks ({@code content.startswith('x')},
 * {@code role.upper()}): inside tags, outside string literals, {@code .name(} becomes the filter call
 * {@code |py_name(}, which binds to the same operand in jinja2's precedence. {@code .strip()} and {@code .replace()}
 * are left to Java's methods of those names, which agree with Python's.
 */
final class PythonMethods {
    private PythonMethods() {}

    private static final Pattern METHOD = Pattern.compile("\\.(startswith|endswith|lstrip|rstrip|upper|lower|title|capitalize|split)\\s*\\(");
    private static final Pattern STRING = Pattern.compile("'(?:[^'\\\\]|\\\\.)*'|\"(?:[^\"\\\\]|\\\\.)*\"", Pattern.DOTALL);

    /**
     * The source as Kiln's Jinja should parse it: Python string methods as filters, and without the one trailing
     * newline jinja2 drops ({@code keep_trailing_newline=False}).
     */
    static String rewrite(String source) {
        if (source.endsWith("\r\n")) source = source.substring(0, source.length() - 2);
        else if (source.endsWith("\n") || source.endsWith("\r")) source = source.substring(0, source.length() - 1);
        StringBuilder b = new StringBuilder(source.length());
        int i = 0;
        while (i < source.length()) {
            int open = nextTag(source, i);
            if (open < 0) {
                b.append(source, i, source.length());
                break;
            }
            b.append(source, i, open);
            String close = source.charAt(open + 1) == '{' ? "}}" : source.charAt(open + 1) == '%' ? "%}" : "#}";
            int end = findClose(source, open + 2, close);
            String body = source.substring(open, end);
            b.append(close.equals("#}") || isRaw(body) ? body : rewriteBody(body));
            i = end;
            if (isRaw(body)) { // copy a {% raw %} block untouched
                Matcher m = Pattern.compile("\\{%-?\\s*endraw\\s*-?%}").matcher(source);
                if (m.find(i)) {
                    b.append(source, i, m.end());
                    i = m.end();
                }
            }
        }
        return b.toString();
    }

    private static boolean isRaw(String tag) { return tag.matches("(?s)\\{%-?\\s*raw\\s*-?%}"); }

    private static int nextTag(String s, int from) {
        for (int i = from; i + 1 < s.length(); i++) {
            if (s.charAt(i) == '{' && (s.charAt(i + 1) == '{' || s.charAt(i + 1) == '%' || s.charAt(i + 1) == '#')) return i;
        }
        return -1;
    }

    /** The index after the tag's close, string literals skipped; the end of the source if it never closes. */
    private static int findClose(String s, int from, String close) {
        char quote = 0;
        for (int i = from; i < s.length(); i++) {
            char c = s.charAt(i);
            if (quote != 0) {
                if (c == '\\') i++;
                else if (c == quote) quote = 0;
            } else if (!close.equals("#}") && (c == '\'' || c == '"')) {
                quote = c;
            } else if (s.startsWith(close, i)) {
                return i + 2;
            }
        }
        return s.length();
    }

    private static String rewriteBody(String body) {
        StringBuilder b = new StringBuilder(body.length());
        Matcher lit = STRING.matcher(body);
        int at = 0;
        while (lit.find()) {
            b.append(METHOD.matcher(body.substring(at, lit.start())).replaceAll("|py_$1("));
            b.append(lit.group());
            at = lit.end();
        }
        b.append(METHOD.matcher(body.substring(at)).replaceAll("|py_$1("));
        return b.toString();
    }

    /** The filters the rewritten calls name. */
    static List<Filter> filters() {
        return List.of(
                filter("py_startswith", (s, a) -> s.startsWith(arg(a))),
                filter("py_endswith", (s, a) -> s.endsWith(arg(a))),
                filter("py_lstrip", (s, a) -> a.length == 0 || a[0] == null ? lstrip(s) : stripChars(s, a[0].toString(), true, false)),
                filter("py_rstrip", (s, a) -> a.length == 0 || a[0] == null ? rstrip(s) : stripChars(s, a[0].toString(), false, true)),
                filter("py_upper", (s, a) -> s.toUpperCase(Locale.ROOT)),
                filter("py_lower", (s, a) -> s.toLowerCase(Locale.ROOT)),
                filter("py_capitalize", (s, a) -> s.isEmpty() ? s : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT)),
                filter("py_title", (s, a) -> title(s)),
                filter("py_split", PythonMethods::split));
    }

    /** Python's {@code str.split(sep=None, maxsplit=-1)}. */
    static List<String> split(String s, Object[] a) {
        String sep = a.length > 0 && a[0] != null ? a[0].toString() : null;
        int max = a.length > 1 && a[1] instanceof Number n ? n.intValue() : -1;
        List<String> out = new java.util.ArrayList<>();
        if (sep != null) {
            if (sep.isEmpty()) throw new IllegalArgumentException("empty separator");
            int at = 0;
            while (max < 0 || out.size() < max) {
                int k = s.indexOf(sep, at);
                if (k < 0) break;
                out.add(s.substring(at, k));
                at = k + sep.length();
            }
            out.add(s.substring(at));
            return out;
        }
        int i = 0, n = s.length();
        while (true) {
            while (i < n && PythonFilters.isPythonSpace(s.codePointAt(i))) i += Character.charCount(s.codePointAt(i));
            if (i >= n) break;
            if (max >= 0 && out.size() == max) {
                out.add(rstrip(s.substring(i)));
                break;
            }
            int j = i;
            while (j < n && !PythonFilters.isPythonSpace(s.codePointAt(j))) j += Character.charCount(s.codePointAt(j));
            out.add(s.substring(i, j));
            i = j;
        }
        return out;
    }

    private static String arg(Object[] a) {
        if (a.length == 0 || a[0] == null) throw new IllegalArgumentException("expected a string argument");
        return a[0].toString();
    }

    private interface StringFn {
        Object apply(String s, Object[] args);
    }

    private static Filter filter(String name, StringFn fn) {
        return new Filter() {
            @Override
            public String getName() { return name; }

            @Override
            public Object filter(Object var, JinjavaInterpreter interpreter, String... args) { return fn.apply(var == null ? "None" : var.toString(), args); }

            @Override
            public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, java.util.Map<String, Object> kwargs) {
                return fn.apply(var == null ? "None" : var.toString(), args);
            }
        };
    }

    static String lstrip(String s) {
        int i = 0;
        while (i < s.length() && PythonFilters.isPythonSpace(s.codePointAt(i))) i += Character.charCount(s.codePointAt(i));
        return s.substring(i);
    }

    static String rstrip(String s) {
        int e = s.length();
        while (e > 0 && PythonFilters.isPythonSpace(s.codePointBefore(e))) e -= Character.charCount(s.codePointBefore(e));
        return s.substring(0, e);
    }

    private static String stripChars(String s, String chars, boolean left, boolean right) {
        int start = 0, end = s.length();
        while (left && start < end && chars.indexOf(s.charAt(start)) >= 0) start++;
        while (right && end > start && chars.indexOf(s.charAt(end - 1)) >= 0) end--;
        return s.substring(start, end);
    }

    private static String title(String s) {
        StringBuilder b = new StringBuilder(s.length());
        boolean prevCased = false;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            b.appendCodePoint(prevCased ? Character.toLowerCase(cp) : Character.toTitleCase(cp));
            prevCased = Character.isLetter(cp);
            i += Character.charCount(cp);
        }
        return b.toString();
    }
}
