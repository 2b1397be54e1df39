//! Finding words a Japanese page should not show: English words and raw codes (`share_gc`,
//! `succeeded`) among the Japanese.

/// The runs of ASCII letters (with `_`) in `text` that are words rather than names: a column
/// name with a dot (`users.id`), an address, a number, a time zone or a term the Japanese
/// catalogue itself writes in Latin letters (`API トークン`, `Webhook エンドポイント`) is not one.
pub fn raw_words(text: &str) -> Vec<String> {
    const NAMES: [&str; 4] = ["JST", "UTC", "API", "Webhook"];
    text.split(|c: char| c.is_whitespace() || "、。（）():;,·#/".contains(c))
        .filter(|token| token.len() >= 2 && token.chars().all(|c| c.is_ascii_alphabetic() || c == '_'))
        .filter(|token| !NAMES.contains(token))
        .map(str::to_owned)
        .collect()
}

/// Every table cell and list item of `page` with raw words in it, as (text, words).
pub fn cells_with_raw_words(page: &super::Page) -> Vec<(String, Vec<String>)> {
    ["td", "li.review-item", "dd"]
        .iter()
        .flat_map(|css| page.texts(css))
        .map(|text| {
            let words = raw_words(&text);
            (text, words)
        })
        .filter(|(_, words)| !words.is_empty())
        .collect()
}

#[test]
fn raw_words_finds_codes_and_english_but_not_names() {
    assert_eq!(raw_words("share_gc: 失敗 succeeded"), ["share_gc", "succeeded"]);
    assert!(raw_words("users.id、shares.sender_id の共有 2026-12-01 15:00 JST a@example.test 3").is_empty());
    assert!(raw_words("API トークン、Webhook エンドポイント").is_empty());
}
