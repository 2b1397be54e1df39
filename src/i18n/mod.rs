//! Japanese and English: the language negotiation and one catalogue of every user-visible string
//! per language, by area of the interface. Each area's file holds its struct and both languages
//! side by side, so a missing translation is a compile error, not a blank on a page.

mod admin;
mod auth;
mod chrome;
mod dashboard;
mod errors;
pub mod format;
mod mail;
mod recipient;
mod request;
mod webhooks;

pub use admin::{AdminText, DeletionText, MaintenanceText};
pub use auth::{AuthText, PasskeyText, SecondFactorText, SsoText};
pub use chrome::ChromeText;
pub use dashboard::{DashboardText, UploaderText};
pub use errors::{ErrorText, ErrorsText};
pub use mail::MailText;
pub use recipient::RecipientText;
pub use request::RequestText;
pub use webhooks::WebhookText;

crate::db_code! {
    /// A language watasu speaks.
    #[derive(Default, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Lang {
        #[default]
        Ja = "ja",
        En = "en",
    }
}

impl Lang {
    /// A language named in a header, a cookie, a form or an argument: any case, spaces around.
    pub fn from_code(code: &str) -> Option<Self> {
        Self::parse(&code.trim().to_ascii_lowercase()).ok()
    }

    /// Every string of the interface in this language.
    pub fn text(self) -> &'static Text {
        match self {
            Lang::Ja => &JA,
            Lang::En => &EN,
        }
    }

    /// Picks the best of our languages for an `Accept-Language` header, honouring q-values.
    /// No header or nothing we speak: Japanese, the language of most of our recipients.
    pub fn negotiate(accept_language: Option<&str>) -> Self {
        let Some(header) = accept_language else {
            return Lang::default();
        };
        let mut best: Option<(f32, Lang)> = None;
        for item in header.split(',') {
            let mut parts = item.split(';');
            let tag = parts.next().unwrap_or("").trim();
            let quality = parts
                .find_map(|p| p.trim().strip_prefix("q="))
                .and_then(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let primary = tag.split('-').next().unwrap_or("");
            if let Some(lang) = Lang::from_code(primary)
                && quality > 0.0
                && best.is_none_or(|(q, _)| quality > q)
            {
                best = Some((quality, lang));
            }
        }
        best.map(|(_, lang)| lang).unwrap_or_default()
    }
}

/// The user-visible strings of one language, by area: reached as `lang.text()`, and in a
/// template as `t.area.field`.
pub struct Text {
    /// What every page shares: header, footer, navigation, the start page, the time zone.
    pub chrome: ChromeText,
    pub errors: ErrorsText,
    pub recipient: RecipientText,
    pub dashboard: DashboardText,
    pub auth: AuthText,
    pub admin: AdminText,
    pub mail: MailText,
    /// File requests: the uploader's pages, their mails, the sender's request pages.
    pub request: RequestText,
    /// Webhook endpoints and their delivery logs.
    pub webhooks: WebhookText,
}

const EN: Text = Text {
    chrome: chrome::EN,
    errors: errors::EN,
    recipient: recipient::EN,
    dashboard: dashboard::EN,
    auth: auth::EN,
    admin: admin::EN,
    mail: mail::EN,
    request: request::EN,
    webhooks: webhooks::EN,
};

const JA: Text = Text {
    chrome: chrome::JA,
    errors: errors::JA,
    recipient: recipient::JA,
    dashboard: dashboard::JA,
    auth: auth::JA,
    admin: admin::JA,
    mail: mail::JA,
    request: request::JA,
    webhooks: webhooks::JA,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_with_the_highest_quality_wins() {
        assert_eq!(Lang::negotiate(Some("en-US,en;q=0.9,ja;q=0.8")), Lang::En);
        assert_eq!(Lang::negotiate(Some("fr, ja;q=0.5, en;q=0.4")), Lang::Ja);
        assert_eq!(Lang::negotiate(Some("en;q=0.2, ja-JP;q=0.7")), Lang::Ja);
    }

    #[test]
    fn the_code_sentences_state_the_codes_length_and_validity() {
        use crate::otp::{CODE_LENGTH, CODE_VALIDITY};
        let (digits, minutes) = (CODE_LENGTH.to_string(), (CODE_VALIDITY.as_secs() / 60).to_string());
        for lang in Lang::ALL {
            let t = lang.text();
            let r = &t.recipient;
            assert!(r.code_label.contains(&digits) && r.code_malformed.contains(&digits), "{lang:?}");
            assert!(t.mail.code_validity.contains(&minutes), "{lang:?}");
            assert!(r.code_sent_if.contains(&minutes), "{lang:?}");
        }
    }

    #[test]
    fn no_header_or_unknown_languages_fall_back_to_japanese() {
        assert_eq!(Lang::negotiate(None), Lang::Ja);
        assert_eq!(Lang::negotiate(Some("fr-FR, de;q=0.8")), Lang::Ja);
        assert_eq!(Lang::negotiate(Some("en;q=0")), Lang::Ja);
        assert_eq!(Lang::negotiate(Some(";;;,,q=")), Lang::Ja);
    }
}

/// The Japanese interface says サインイン and サインアウト (the more used of two pairs), never the
/// other pair: one term, so a person never wonders whether two steps differ.
#[cfg(test)]
mod one_term_for_sign_in {
    use std::path::Path;

    fn texts_under(dir: &Path, found: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                texts_under(&path, found);
            } else {
                found.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap_or_default()));
            }
        }
    }

    #[test]
    fn the_japanese_words_for_signing_in_and_out_are_one_pair() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        texts_under(&root.join("src/i18n"), &mut files);
        texts_under(&root.join("templates"), &mut files);
        assert!(files.len() > 10, "the catalogue and templates were not found");
        for (path, text) in files {
            // Spelt in halves, so this file does not hold the words it looks for.
            for other in [concat!("ログ", "イン"), concat!("ログ", "アウト")] {
                assert!(!text.contains(other), "{path} says {other}: the interface says サインイン / サインアウト");
            }
        }
    }
}
