//! Japanese and English: the language negotiation and one catalogue of every user-visible string
//! per language. A missing translation is a compile error, not a blank on a page.

pub mod binary_size;
mod chrome;
mod deletion;
mod deletion_records;
mod en;
pub mod format;
mod ja;
mod maintenance;
mod passkeys;
mod recipient_flow;
mod second_factor;
mod sender_pages;
mod sso;
mod uploader;

pub use chrome::ChromeText;
pub use deletion::DeletionText;
pub use maintenance::MaintenanceText;
pub use passkeys::PasskeyText;
pub use recipient_flow::RecipientFlowText;
pub use second_factor::SecondFactorText;
pub use sender_pages::SenderPagesText;
pub use sso::SsoText;
pub use uploader::UploaderText;

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
            Lang::Ja => &ja::TEXT,
            Lang::En => &en::TEXT,
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

/// The user-visible strings of one language.
pub struct Text {
    pub lang_name: &'static str,
    pub site_tagline: &'static str,
    pub skip_to_content: &'static str,
    pub language_switch_label: &'static str,
    pub footer: &'static str,
    pub home_title: &'static str,
    pub home_lead: &'static str,
    pub home_steps: [&'static str; 3],
    pub error_request_id: &'static str,
    pub error_back_home: &'static str,
    pub error_bad_request: ErrorText,
    pub error_forbidden: ErrorText,
    pub error_not_found: ErrorText,
    pub error_method_not_allowed: ErrorText,
    pub error_gone: ErrorText,
    pub error_too_large: ErrorText,
    pub error_too_many: ErrorText,
    pub error_internal: ErrorText,
    pub error_unavailable: ErrorText,
    pub error_storage_full: ErrorText,
    /// The database refused a write for lack of space: nothing was lost or changed.
    pub error_database_full: ErrorText,
    /// The account's authenticator app was sealed with a secret key since replaced.
    pub error_factor_unreadable: ErrorText,
    /// A request (an upload) cut because the server is restarting.
    pub error_restarting: ErrorText,
    pub share_not_available: ErrorText,
    pub share_already_downloaded: ErrorText,
    pub share_locked: ErrorText,
    pub verify_first: ErrorText,
    pub landing_title: &'static str,
    pub sent_by_before: &'static str,
    pub sent_by_after: &'static str,
    /// `|` marks where a Japanese line may break (`templates/recipient/_phrases.html`).
    pub landing_explain: &'static str,
    pub email_label: &'static str,
    pub email_hint: &'static str,
    pub email_submit: &'static str,
    pub code_sent_title: &'static str,
    pub code_sent_body: &'static str,
    pub spam_hint: &'static str,
    pub code_label: &'static str,
    pub code_submit: &'static str,
    pub code_wrong: &'static str,
    pub code_malformed: &'static str,
    /// `|` marks where a Japanese line may break (`templates/recipient/_phrases.html`).
    pub code_dead: &'static str,
    pub resend_code: &'static str,
    pub other_address: &'static str,
    pub download_title: &'static str,
    pub file_name_label: &'static str,
    pub file_size_label: &'static str,
    pub file_sha256_label: &'static str,
    pub message_label: &'static str,
    pub expires_label: &'static str,
    /// `|` marks where a Japanese line may break (`templates/recipient/_phrases.html`).
    pub download_once_warning: &'static str,
    pub download_button: &'static str,
    pub download_started: &'static str,
    pub mail_kind_notification: &'static str,
    pub mail_kind_receipt: &'static str,
    pub fresh_link_submit: &'static str,
    pub fresh_link_hint: &'static str,
    pub fresh_link_done: &'static str,
    pub unlock_submit: &'static str,
    pub dev_outbox_title: &'static str,
    pub dev_outbox_lead: &'static str,
    pub dev_outbox_empty: &'static str,
    pub dev_outbox_to: &'static str,
    pub nav_team: &'static str,
    pub team_title: &'static str,
    pub team_invite_title: &'static str,
    pub team_invite_hint: &'static str,
    pub team_invite_submit: &'static str,
    pub team_invited: &'static str,
    pub team_exists: &'static str,
    pub team_members: &'static str,
    pub role_admin: &'static str,
    pub role_sender: &'static str,
    pub member_disabled: &'static str,
    pub disable_submit: &'static str,
    pub invite_title: &'static str,
    pub invite_lead: &'static str,
    pub invite_submit: &'static str,
    pub mail_invite_subject: &'static str,
    pub mail_invite_body: &'static str,
    pub mail_invite_valid: &'static str,
    pub mail_invite_button: &'static str,
    pub mail_receipt_subject: &'static str,
    pub mail_receipt_body: &'static str,
    pub mail_receipt_recipient: &'static str,
    pub mail_receipt_file: &'static str,
    pub mail_receipt_started: &'static str,
    pub mail_receipt_completed: &'static str,
    pub mail_receipt_off: &'static str,
    pub nav_my_shares: &'static str,
    pub nav_new_share: &'static str,
    pub shares_title: &'static str,
    pub shares_empty: &'static str,
    pub shares_older: &'static str,
    pub col_recipient: &'static str,
    pub col_file: &'static str,
    pub col_created: &'static str,
    pub col_expires: &'static str,
    pub col_status: &'static str,
    pub status_waiting: &'static str,
    pub status_locked: &'static str,
    pub status_downloaded: &'static str,
    pub status_expired: &'static str,
    pub status_revoked: &'static str,
    pub status_deleted: &'static str,
    pub new_share_title: &'static str,
    pub file_label: &'static str,
    pub file_hint_before: &'static str,
    pub recipient_label: &'static str,
    pub recipient_hint: &'static str,
    pub expires_in_label: &'static str,
    pub expires_1h: &'static str,
    pub expires_1d: &'static str,
    pub expires_7d: &'static str,
    pub expires_max: &'static str,
    pub message_input_label: &'static str,
    pub mail_lang_label: &'static str,
    pub notify_label: &'static str,
    pub upload_submit: &'static str,
    pub upload_too_large: &'static str,
    pub file_missing: &'static str,
    /// The sender was disabled (or their deletion opened) while their file was arriving.
    pub upload_sender_disabled: &'static str,
    /// Around "NAME (SIZE)" on a form that keeps a finished upload.
    pub upload_kept_before: &'static str,
    pub upload_kept_after: &'static str,
    /// A form named an upload that is not (or no longer) the sender's to share.
    pub upload_unavailable: &'static str,
    /// The message to the recipient is over `share::MESSAGE_LIMIT` characters.
    pub message_too_long: &'static str,
    pub created_title: &'static str,
    pub created_lead: &'static str,
    pub created_once: &'static str,
    pub copy_link: &'static str,
    pub copied: &'static str,
    pub share_title: &'static str,
    pub timeline_title: &'static str,
    pub mail_state_title: &'static str,
    pub mail_pending: &'static str,
    pub mail_sending: &'static str,
    pub mail_sent: &'static str,
    pub mail_dead: &'static str,
    pub mail_dropped: &'static str,
    pub revoke_submit: &'static str,
    pub revoke_hint: &'static str,
    pub event_opened: &'static str,
    pub event_code_sent: &'static str,
    pub event_code_mail_failed: &'static str,
    pub event_code_failed: &'static str,
    pub event_locked: &'static str,
    pub event_unlocked: &'static str,
    pub event_verified: &'static str,
    pub event_downloaded: &'static str,
    pub event_completed: &'static str,
    pub event_refused: &'static str,
    pub event_revoked: &'static str,
    pub event_purged: &'static str,
    pub nav_sign_in: &'static str,
    pub nav_account: &'static str,
    pub nav_sign_out: &'static str,
    pub setup_title: &'static str,
    pub setup_lead: &'static str,
    pub name_label: &'static str,
    pub email_account_label: &'static str,
    pub password_label: &'static str,
    pub password_new_label: &'static str,
    pub password_current_label: &'static str,
    pub password_hint: &'static str,
    pub password_too_short: &'static str,
    pub password_too_long: &'static str,
    pub password_too_guessable: &'static str,
    pub password_breached: &'static str,
    pub email_invalid: &'static str,
    pub name_invalid: &'static str,
    pub setup_submit: &'static str,
    pub login_title: &'static str,
    pub login_submit: &'static str,
    pub login_failed: &'static str,
    pub account_title: &'static str,
    pub password_change_title: &'static str,
    pub password_change_submit: &'static str,
    pub password_changed: &'static str,
    pub password_current_wrong: &'static str,
    pub file_details: &'static str,
    pub mail_code_subject: &'static str,
    pub mail_code_intro: &'static str,
    pub mail_code_validity: &'static str,
    pub mail_code_ignore: &'static str,
    pub mail_notify_subject_after: &'static str,
    pub mail_notify_open: &'static str,
    pub mail_notify_steps: &'static str,
    pub mail_notify_until: &'static str,
    pub mail_notify_message: &'static str,
    pub mail_notify_button: &'static str,
    pub mail_link_fallback: &'static str,
    pub mail_footer: &'static str,
    pub nav_maintenance: &'static str,
    pub maint_title: &'static str,
    pub maint_lead: &'static str,
    pub maint_empty: &'static str,
    pub maint_col_run: &'static str,
    pub maint_col_kind: &'static str,
    pub maint_col_trigger: &'static str,
    pub maint_col_state: &'static str,
    pub maint_col_counts: &'static str,
    pub maint_col_accepted: &'static str,
    pub maint_col_note: &'static str,
    pub maint_back: &'static str,
    pub maint_finished: &'static str,
    pub maint_summary_title: &'static str,
    pub maint_items_title: &'static str,
    pub maint_no_items: &'static str,
    pub maint_more: &'static str,
    /// The ledger's codes (kinds, triggers, states, outcomes, targets) in words.
    pub maintenance: MaintenanceText,
    pub removed_after_retention: &'static str,
    pub deletion: DeletionText,
    pub uploader: UploaderText,
    pub chrome: ChromeText,
    pub second_factor: SecondFactorText,
    pub passkeys: PasskeyText,
    pub sso: SsoText,
}

/// Title and explanation of one error page: what happened and what the person can do next.
pub struct ErrorText {
    pub title: &'static str,
    pub body: &'static str,
}

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
            assert!(t.code_label.contains(&digits) && t.code_malformed.contains(&digits), "{lang:?}");
            assert!(t.mail_code_validity.contains(&minutes), "{lang:?}");
            assert!(lang.recipient_flow().code_sent_if.contains(&minutes), "{lang:?}");
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
