//! The strings of deletion cases, and the words for their stored codes.

/// The strings of deletion cases: the sender's request, the admin pages and the final mail.
pub struct DeletionText {
    pub nav: &'static str,
    pub account_title: &'static str,
    pub account_lead: &'static str,
    pub password_label: &'static str,
    pub submit: &'static str,
    pub last_admin: &'static str,
    pub already_open: &'static str,
    pub requested_title: &'static str,
    pub requested_lead: &'static str,
    pub reference_label: &'static str,
    pub cases_title: &'static str,
    pub cases_empty: &'static str,
    pub needs_review_title: &'static str,
    pub needs_review_empty: &'static str,
    pub col_state: &'static str,
    pub col_opened_by: &'static str,
    pub col_opened: &'static str,
    pub col_updated: &'static str,
    pub col_store: &'static str,
    pub col_action: &'static str,
    pub col_outcome: &'static str,
    pub col_reason: &'static str,
    pub col_found: &'static str,
    pub col_deleted: &'static str,
    pub col_remaining: &'static str,
    pub col_attempts: &'static str,
    pub col_verified: &'static str,
    pub col_searched_by: &'static str,
    pub evidence_title: &'static str,
    pub steps_title: &'static str,
    pub retry_submit: &'static str,
    pub team_summary: &'static str,
    pub team_hint: &'static str,
    pub team_submit: &'static str,
    /// In the order of `CaseState::ALL`.
    pub states: [&'static str; 7],
    /// In the order of `Outcome::ALL`.
    pub outcomes: [&'static str; 6],
    /// delete, anonymise, retain.
    pub actions: [&'static str; 3],
    /// self, admin, operator.
    pub roles: [&'static str; 3],
    /// In the order of `Store::ORDER`.
    pub stores: [&'static str; crate::deletion::Store::ORDER.len()],
    pub records: super::deletion_records::RecordWords,
    pub mail_subject: &'static str,
    pub mail_intro: &'static str,
    pub mail_outcome_intro: &'static str,
    pub mail_constraints: &'static str,
    pub mail_account_last: &'static str,
}

impl DeletionText {
    pub fn state(&self, code: &str) -> &'static str {
        let i = crate::deletion::CaseState::ALL.iter().position(|s| s.code() == code);
        i.map_or("?", |i| self.states[i])
    }

    pub fn outcome(&self, code: &str) -> &'static str {
        let i = crate::deletion::Outcome::ALL.iter().position(|o| o.code() == code);
        i.map_or("?", |i| self.outcomes[i])
    }

    pub fn store(&self, code: &str) -> &'static str {
        crate::deletion::Store::parse(code).map_or("?", |s| self.stores[s.position()])
    }

    pub fn action(&self, code: &str) -> &'static str {
        ["delete", "anonymise", "retain"].iter().position(|a| *a == code).map_or("?", |i| self.actions[i])
    }

    pub fn role(&self, code: &str) -> &'static str {
        ["self", "admin", "operator"].iter().position(|r| *r == code).map_or("?", |i| self.roles[i])
    }
}
