//! The app's paths that handlers redirect to or hand to a page, written once. They are
//! app-relative: the base path is added on the way out (`middleware::prefix_redirects`), or by
//! the template (`{{ c.base }}`).

pub const HOME: &str = "/";
pub const LOGIN: &str = "/login";
/// The sign-in page, saying the pending sign-in ran out.
pub const LOGIN_EXPIRED: &str = "/login?expired=1";
/// The sign-in page, saying the pending sign-in took its last wrong code.
pub const LOGIN_TRIES_USED_UP: &str = "/login?tries=1";
/// The sign-in page, saying the session ended while a file was being sent.
pub const LOGIN_UPLOAD_LOST: &str = "/login?upload_lost=1";
/// The code step of a pending sign-in.
pub const SECOND_FACTOR: &str = "/login/second-factor";
/// The set-up a team's policy requires before signing in.
pub const ENROL: &str = "/login/enrol";
/// The dashboard.
pub const SHARES: &str = "/shares";
pub const ACCOUNT: &str = "/account";
/// The account page at its second factor's section.
pub const ACCOUNT_SECOND_FACTOR: &str = "/account#second-factor";
/// The account's own set-up of an app.
pub const TOTP_SETUP: &str = "/account/totp";
pub const TEAM: &str = "/team";
/// The signed-in person's webhook endpoints.
pub const WEBHOOKS: &str = "/webhooks";
/// The same after an endpoint was deleted.
pub const WEBHOOKS_DELETED: &str = "/webhooks?done=deleted";

/// A webhook endpoint's page after an action, with its notice.
pub fn webhook_done(id: i64, done: &str) -> String {
    format!("/webhooks/{id}?done={done}")
}

/// The account page after a change, with its notice (`saved`) at its section.
pub fn account_saved(saved: &str, section: &str) -> String {
    format!("/account?saved={saved}#{section}")
}

/// The team page after a change, with its notice.
pub fn team_done(done: &str) -> String {
    format!("/team?done={done}")
}

/// The team page after a change to one invitation, whose notice names who was invited.
pub fn team_invitation_done(done: &str, invitation: i64) -> String {
    format!("/team?done={done}&invitation={invitation}")
}

/// The page that asks before `change` (`disable`, `delete`, `reset-factors`) is done to a member.
pub fn team_member(id: i64, change: &str) -> String {
    format!("/team/{id}/{change}")
}

/// The first-run setup link.
pub fn setup(token: &str) -> String {
    format!("/setup/{token}")
}

/// An invitation link.
pub fn invitation(token: &str) -> String {
    format!("/invite/{token}")
}

/// A share's page.
pub fn share(id: i64) -> String {
    format!("/shares/{id}")
}

/// A share's page after an action, with its notice.
pub fn share_done(id: i64, done: &str) -> String {
    format!("/shares/{id}?done={done}")
}

/// The page a new share leads to.
pub fn share_created(id: i64) -> String {
    format!("/shares/{id}/created")
}

/// A recipient's link.
pub fn link(token: &str) -> String {
    format!("/s/{token}")
}

/// The claimed file behind a recipient's link (the archive of all, when there are several).
pub fn link_file(token: &str) -> String {
    format!("/s/{token}/file")
}

/// One claimed file of several behind a recipient's link, by its position.
/// The secret note behind a recipient's link.
pub fn link_note(token: &str) -> String {
    format!("/s/{token}/note")
}

pub fn link_file_at(token: &str, position: i32) -> String {
    format!("/s/{token}/files/{position}")
}

/// A deletion case's admin page.
pub fn deletion_case(reference: &str) -> String {
    format!("/admin/deletions/{reference}")
}

/// A maintenance run, as the API shows it.
pub fn maintenance_run(id: i64) -> String {
    format!("/maintenance/runs/{id}")
}

/// A resumable upload.
pub fn upload(id: &str) -> String {
    format!("/uploads/{id}")
}

/// A file request uploader's resumable upload, under the request's link.
pub fn request_upload(token: &str, id: &str) -> String {
    format!("/s/{token}/uploads/{id}")
}
