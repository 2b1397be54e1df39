//! Text that people type and others read: names and messages lose the characters that change how
//! the rest reads without being seen themselves.

/// Removes control characters, Unicode format characters (category Cf: the bidirectional
/// embeddings, overrides and isolates U+202A–202E and U+2066–2069, the marks U+200E/F and U+061C,
/// the zero-width space, joiners and word joiner, the byte-order mark, soft hyphen, tag
/// characters…) and the invisible fillers. `invoice\u{202e}gpj.exe` would otherwise read as
/// "invoiceexe.jpg". Used where a file name, display name or message is stored, and again where
/// one is shown (for what was stored before).
pub fn strip_invisible(text: &str) -> String {
    text.chars().filter(|&c| !c.is_control() && !is_invisible(c)).collect()
}

/// Like [`strip_invisible`], for a message: its line breaks and tabs stay.
pub fn strip_invisible_keeping_lines(text: &str) -> String {
    text.chars().filter(|&c| matches!(c, '\n' | '\r' | '\t') || (!c.is_control() && !is_invisible(c))).collect()
}

/// True when `text` has nothing [`strip_invisible`] would remove.
pub fn is_visible_text(text: &str) -> bool {
    !text.chars().any(|c| c.is_control() || is_invisible(c))
}

/// Category Cf (Unicode 16) and the characters that render as nothing.
fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x034F | 0x061C | 0x06DD | 0x070F | 0x08E2 | 0x115F | 0x1160 | 0x17B4 | 0x17B5
        | 0x180B..=0x180F | 0x3164 | 0xFEFF | 0xFFA0 | 0x110BD | 0x110CD | 0xE0001
        | 0x0600..=0x0605 | 0x0890..=0x0891
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F
        | 0xFE00..=0xFE0F | 0xFFF9..=0xFFFB | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A | 0xE0020..=0xE007F | 0xE0100..=0xE01EF)
}

#[cfg(test)]
mod tests {
    use super::{is_visible_text, strip_invisible};

    #[test]
    fn bidirectional_and_zero_width_characters_are_removed_and_the_rest_kept() {
        assert_eq!(strip_invisible("invoice\u{202e}gpj.exe"), "invoicegpj.exe");
        for c in ['\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}'] {
            assert_eq!(strip_invisible(&format!("a{c}b")), "ab", "{:04x}", c as u32);
        }
        for c in
            ['\u{200e}', '\u{200f}', '\u{061c}', '\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}', '\u{ad}']
        {
            assert_eq!(strip_invisible(&format!("a{c}b")), "ab", "{:04x}", c as u32);
        }
        assert_eq!(strip_invisible("a\u{e0041}\u{0007}b\r\n"), "ab");
        assert_eq!(strip_invisible("報告書 (最終版).pdf"), "報告書 (最終版).pdf");
        assert_eq!(strip_invisible("مرحبا שלום"), "مرحبا שלום");
        assert_eq!(super::strip_invisible_keeping_lines("Hello\u{202e},\r\n\tthere\u{200b}"), "Hello,\r\n\tthere");
        assert!(is_visible_text("Sato Hanako") && !is_visible_text("Sato\u{2066}"));
    }
}
