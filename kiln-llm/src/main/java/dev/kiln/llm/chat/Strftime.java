package dev.kiln.llm.chat;

import java.time.ZonedDateTime;
import java.time.format.TextStyle;
import java.util.Locale;

/** Python's {@code strftime} directives on a {@link ZonedDateTime}, in the C locale (English names). */
final class Strftime {
    private Strftime() {}

    static String format(ZonedDateTime t, String format) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < format.length(); i++) {
            char c = format.charAt(i);
            if (c != '%' || i + 1 == format.length()) {
                b.append(c);
                continue;
            }
            char d = format.charAt(++i);
            switch (d) {
                case 'd' -> b.append(two(t.getDayOfMonth()));
                case 'e' -> b.append(String.format(Locale.ROOT, "%2d", t.getDayOfMonth()));
                case 'm' -> b.append(two(t.getMonthValue()));
                case 'Y' -> b.append(t.getYear());
                case 'y' -> b.append(two(t.getYear() % 100));
                case 'b', 'h' -> b.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
                case 'B' -> b.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
                case 'a' -> b.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
                case 'A' -> b.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
                case 'w' -> b.append(t.getDayOfWeek().getValue() % 7);
                case 'j' -> b.append(String.format(Locale.ROOT, "%03d", t.getDayOfYear()));
                case 'H' -> b.append(two(t.getHour()));
                case 'I' -> b.append(two(t.getHour() % 12 == 0 ? 12 : t.getHour() % 12));
                case 'p' -> b.append(t.getHour() < 12 ? "AM" : "PM");
                case 'M' -> b.append(two(t.getMinute()));
                case 'S' -> b.append(two(t.getSecond()));
                case 'f' -> b.append(String.format(Locale.ROOT, "%06d", t.getNano() / 1000));
                case 'z' -> b.append(t.getOffset().getId().equals("Z") ? "+0000" : t.getOffset().getId().replace(":", ""));
                case 'Z' -> b.append(t.getZone().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
                case 'F' -> b.append(t.getYear()).append('-').append(two(t.getMonthValue())).append('-').append(two(t.getDayOfMonth()));
                case 'T' -> b.append(two(t.getHour())).append(':').append(two(t.getMinute())).append(':').append(two(t.getSecond()));
                case '%' -> b.append('%');
                default -> b.append('%').append(d);
            }
        }
        return b.toString();
    }

    private static String two(int v) { return v < 10 ? "0" + v : Integer.toString(v); }
}
