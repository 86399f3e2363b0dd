package dev.kiln.llm.chat;

import java.util.LinkedHashSet;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The filter and test names a template's expressions use (string literals and text outside tags left out). */
final class TemplateScan {
    private TemplateScan() {}

    private static final Pattern TAG = Pattern.compile("\\{\\{(.*?)}}|\\{%(.*?)%}", Pattern.DOTALL);
    private static final Pattern STRING = Pattern.compile("'(?:[^'\\\\]|\\\\.)*'|\"(?:[^\"\\\\]|\\\\.)*\"", Pattern.DOTALL);
    private static final Pattern FILTER = Pattern.compile("\\|\\s*([A-Za-z_]\\w*)");
    private static final Pattern TEST = Pattern.compile("\\bis\\s+(?:not\\s+)?([A-Za-z_]\\w*)");
    private static final Pattern RAW = Pattern.compile("\\{%-?\\s*raw\\s*-?%}.*?\\{%-?\\s*endraw\\s*-?%}", Pattern.DOTALL);
    private static final Pattern COMMENT = Pattern.compile("\\{#.*?#}", Pattern.DOTALL);

    static Set<String> filters(String source) { return names(source, FILTER); }

    static Set<String> tests(String source) { return names(source, TEST); }

    private static Set<String> names(String source, Pattern p) {
        String s = COMMENT.matcher(RAW.matcher(source).replaceAll("")).replaceAll("");
        Set<String> names = new LinkedHashSet<>();
        Matcher tag = TAG.matcher(s);
        while (tag.find()) {
            String body = tag.group(1) != null ? tag.group(1) : tag.group(2);
            Matcher m = p.matcher(STRING.matcher(body).replaceAll("''"));
            while (m.find()) names.add(m.group(1));
        }
        return names;
    }
}
