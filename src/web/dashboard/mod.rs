//! The sender's dashboard: their shares with each one's outcome, one share's timeline (refreshing
//! its status and timeline while it can still change, never the buttons a sender may be using),
//! ending a share after a confirmation, and the new-share upload with its own result page. A share
//! the viewer may not see answers 404, exactly like one that does not exist.

mod actions;
mod created_page;
mod fields;
mod file_lines;
pub(crate) mod form_body;
mod form_page;
mod link_cookie;
mod list_filter;
mod new_share;
mod outcome_time;
mod timeline;

pub use actions::{renew_link, revoke, revoke_confirm, revoke_handover, unlock};
pub use created_page::created;
pub use new_share::{new_share_form, upload};
pub(super) use timeline::event_text;

use askama::Template;
use poem::{
    IntoResponse, Response, Route, get, handler,
    http::StatusCode,
    post,
    web::{Data, Html, Path, Query},
};
use serde::Deserialize;

use self::timeline::Timeline;
use super::{AppError, AppState, Chrome, Context, SignedIn, middleware::is_htmx, render};
use crate::{
    accounts::User,
    db::Timestamp,
    i18n::{
        Text,
        format::{Reader, human_size, human_time},
    },
    mail::outbox::{MailDelivery, MailKind, MailStatus},
    services::sharing::viewer,
    share::sender::{SenderStatus, ShareSummary},
};

const PAGE_SIZE: i64 = 25;

/// The sender's shares: the list, one share, its live updates, a new one, and what a sender does
/// to one.
pub fn routes(route: Route) -> Route {
    route
        .at("/shares", get(list))
        .at("/shares/new", get(new_share_form).post(upload))
        .at("/shares/:id", get(show))
        .at("/shares/:id/live", get(live))
        .at("/shares/:id/created", get(created))
        .at("/shares/:id/revoke", get(revoke_confirm).post(revoke))
        .at("/shares/:id/end-handover", post(revoke_handover))
        .at("/shares/:id/link", post(renew_link))
        .at("/shares/:id/unlock", post(unlock))
}

/// The answer for a share this sender may not see: the same 404 as for one that does not exist.
fn not_visible() -> AppError {
    AppError::NotFound("share not visible to this sender")
}

/// The words for an outcome; a secret note's share is "read" where a file's is "downloaded".
fn status_text(t: &'static Text, status: SenderStatus, note: bool) -> &'static str {
    match status {
        SenderStatus::Downloaded if note => t.dashboard.note.status_read,
        SenderStatus::Waiting => t.dashboard.status_waiting,
        SenderStatus::Locked => t.dashboard.status_locked,
        SenderStatus::Downloaded => t.dashboard.status_downloaded,
        SenderStatus::Expired => t.dashboard.status_expired,
        SenderStatus::Revoked => t.dashboard.status_revoked,
        SenderStatus::Deleted => t.dashboard.status_deleted,
    }
}

/// A share as the templates show it.
pub struct ShareRow {
    id: i64,
    recipient: String,
    file_name: String,
    /// The handover's files together.
    size: String,
    /// "+ 2 more files" after the first file's name; empty for a single file.
    more_files: String,
    created: String,
    expires: String,
    status: &'static str,
    status_text: &'static str,
    /// The file is gone from the server: a secondary line under the outcome.
    file_deleted: bool,
    /// The share hands over a secret note (its `file_name` then says so, never the note).
    note: bool,
    /// Time left while waiting, the download time once downloaded; empty otherwise.
    outcome_time: String,
}

fn row(c: &Chrome, share: ShareSummary) -> ShareRow {
    // The retention sweep blanks these once a purged share is old enough.
    let or_removed =
        |text: String| if text.is_empty() { c.t.dashboard.removed_after_retention.to_owned() } else { text };
    let outcome_time = outcome_time::outcome_time(&share, c.reader(), Timestamp(chrono::Utc::now()));
    let note = share.is_note();
    let file_name = if note { c.t.dashboard.note.carried.to_owned() } else { or_removed(share.file_name) };
    ShareRow {
        outcome_time,
        id: share.id,
        recipient: or_removed(share.recipient_email),
        file_name,
        note,
        size: human_size(share.size_bytes, c.lang),
        more_files: more_files(c.t, share.file_count),
        created: human_time(share.created_at, c.reader()),
        expires: human_time(share.expires_at, c.reader()),
        status: share.status.code(),
        status_text: status_text(c.t, share.status, note),
        file_deleted: share.file_deleted,
    }
}

/// "+ N more files" after the first name of a handover of `count` files; empty for one file.
fn more_files(t: &'static Text, count: i64) -> String {
    let h = &t.dashboard.handover;
    match count - 1 {
        ..=0 => String::new(),
        1 => h.more_file.to_owned(),
        more => h.more_files.replace("{n}", &more.to_string()),
    }
}

/// A share page's handover: its files when there are several, and the other recipients.
pub struct HandoverPart {
    /// Listed when there are several, or when the virus scan has a word on them.
    files: Vec<file_lines::FileLine>,
    others: Vec<ShareRow>,
    /// Some share of it can still be ended.
    can_end: bool,
}

fn handover_part(c: &Chrome, id: i64, handover: crate::services::sharing::HandoverView) -> HandoverPart {
    let can_end = handover.shares.iter().any(|share| share.status.can_be_ended());
    let scanned = handover.files.iter().any(|file| file.scan_state.is_some());
    let files = match handover.files.len() {
        1 if !scanned => Vec::new(),
        _ => handover.files.into_iter().map(|file| file_lines::file_line(c.t, c.lang, file)).collect(),
    };
    let others = handover.shares.into_iter().filter(|share| share.id != id).map(|share| row(c, share)).collect();
    HandoverPart { files, others, can_end }
}

#[derive(Template)]
#[template(path = "dashboard/shares.html")]
struct SharesPage {
    c: Chrome,
    rows: Vec<ShareRow>,
    older: Option<i64>,
    filters: Vec<list_filter::FilterLink>,
    /// Kept on the "older" link: empty or `status=…&`.
    filter_query: String,
    filtered: bool,
}

#[derive(Deserialize)]
pub struct ListQuery {
    before: Option<i64>,
    /// One outcome's code to show only those shares; unknown or absent: all.
    status: Option<String>,
}

/// GET /shares: the viewer's shares, newest first, of one outcome if the filter asks.
#[handler]
pub async fn list(
    c: Chrome,
    Query(query): Query<ListQuery>,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let filter = list_filter::Filter::from_query(query.status.as_deref());
    let shares = state.services.sharing.list(viewer(&user), filter.0, query.before, PAGE_SIZE + 1).await?;
    let older = (shares.len() as i64 > PAGE_SIZE).then(|| shares[PAGE_SIZE as usize - 1].id);
    let rows = shares.into_iter().take(PAGE_SIZE as usize).map(|s| row(&c, s)).collect();
    let filters = list_filter::links(c.t, filter);
    render(&SharesPage { c, rows, older, filters, filter_query: filter.query(), filtered: filter.0.is_some() })
}

pub struct MailRow {
    kind: &'static str,
    /// Which link a link mail carried: "first link", "new link (2)".
    link: Option<String>,
    status: &'static str,
    text: &'static str,
    at: String,
}

#[derive(Template)]
#[template(path = "dashboard/share.html", blocks = ["status", "actions", "live"])]
struct SharePage<'a> {
    c: Chrome,
    share: ShareRow,
    /// The recipient replied with files: the reply's request page.
    reply: Option<i64>,
    /// The files and the other recipients of the share's handover.
    handover: HandoverPart,
    timeline: Timeline,
    mails: Vec<MailRow>,
    is_final: bool,
    can_revoke: bool,
    can_unlock: bool,
    /// While locked: whether one browser or several typed the wrong codes (empty when unknown).
    locked_browsers: String,
    /// A link made just now, shown this once.
    fresh_link: Option<String>,
    /// The link's code mails are spent (by the recipient or by anyone with the link and the
    /// address): until when, to read and in RFC 3339. Only while a fresh link can be sent.
    code_mails_spent: Option<SpentBudget>,
    /// What the action that led here came to.
    notice: Option<&'static str>,
    /// What the page shows, in short: the next poll sends it back and hears "no change" (204) while
    /// nothing changed, so nothing on the page is replaced or announced for nothing.
    version: String,
    /// A poll's answer: the status and the actions go out of band into the nodes already there.
    oob: bool,
    csrf_token: &'a str,
}

/// Until when no code mail leaves for the share's current link.
pub struct SpentBudget {
    text: String,
    until_rfc3339: String,
}

fn spent_budget(reader: Reader, wait: std::time::Duration) -> Option<SpentBudget> {
    let until = chrono::Utc::now() + chrono::Duration::from_std(wait).ok()?;
    let text = reader.lang.text().dashboard.code_mails_spent.replace("{until}", &human_time(Timestamp(until), reader));
    (!wait.is_zero())
        .then(|| SpentBudget { text, until_rfc3339: until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true) })
}

fn mail_row(t: &'static Text, reader: Reader, mail: MailDelivery) -> MailRow {
    MailRow {
        kind: match mail.kind {
            MailKind::DownloadReceipt | MailKind::FilesArrived => t.dashboard.mail_kind_receipt,
            MailKind::ShareLocked => t.dashboard.mail_kind_locked,
            MailKind::ScanRefused => t.dashboard.scan.mail_kind,
            // Mails to senders themselves belong to no share: they never reach this list.
            MailKind::ShareNotification | MailKind::Invitation | MailKind::WrongCodesWarning => {
                t.dashboard.mail_kind_notification
            }
        },
        text: match mail.status {
            MailStatus::Pending => t.dashboard.mail_pending,
            MailStatus::Sending => t.dashboard.mail_sending,
            MailStatus::Sent => t.dashboard.mail_sent,
            MailStatus::Dead => t.dashboard.mail_dead,
            MailStatus::Dropped => t.dashboard.mail_dropped,
        },
        at: human_time(mail.sent_at.unwrap_or(mail.created_at), reader),
        status: mail.status.code(),
        link: None,
    }
}

/// The share's mails, each link mail labelled with its link. The last one carries the newest link,
/// so they are counted back from the number of links: a share sent without a mail has none for its
/// first link.
fn mail_rows(t: &'static Text, reader: Reader, mails: Vec<MailDelivery>, links: usize) -> Vec<MailRow> {
    let link_mails = mails.iter().filter(|m| m.kind == MailKind::ShareNotification).count();
    let mut link = links.saturating_sub(link_mails);
    let mut label = |kind| {
        (kind == MailKind::ShareNotification).then(|| {
            link += 1;
            timeline::link_label(t, link)
        })
    };
    mails.into_iter().map(|mail| MailRow { link: label(mail.kind), ..mail_row(t, reader, mail) }).collect()
}

/// The page's state in a few URL-safe characters: the outcome first (a poll compares it to decide
/// whether the actions changed), then whether the file is gone, the events, the mails, and whether
/// the code mails are spent (that passes with time alone, no event marks it).
fn version(share: &ShareRow, events: usize, mails: &[MailRow], spent: bool) -> String {
    let mails: Vec<&str> = mails.iter().map(|m| m.status).collect();
    format!("{}.{}.{events}.{}.{}", share.status, u8::from(share.file_deleted), mails.join("-"), u8::from(spent))
}

/// Who asks for the share page, in which language.
struct ShareView<'a> {
    c: Chrome,
    user: &'a User,
}

/// The share page, built for a full view or for a poll's answer.
async fn share_page<'a>(
    view: ShareView<'_>,
    state: &AppState,
    id: i64,
    csrf_token: &'a str,
) -> Result<SharePage<'a>, AppError> {
    let ShareView { c, user } = view;
    let timeline = state.services.sharing.timeline(viewer(user), id).await?.ok_or_else(not_visible)?;
    let (t, reader) = (c.t, c.reader());
    let event_count = timeline.events.len();
    let links = 1 + timeline.events.iter().filter(|e| e.kind == crate::share::EventKind::LinkRenewed).count();
    let mails = mail_rows(t, reader, timeline.mails, links);
    let events = timeline::timeline(t, reader, timeline.events, timeline.share.is_note());
    let status = timeline.share.status;
    let handover = handover_part(&c, id, timeline.handover);
    let share = row(&c, timeline.share);
    let code_mails_spent = spent_budget(reader, timeline.code_mails_wait).filter(|_| status.can_be_ended());
    let reply = state.services.requests.reply_of(id).await?;
    Ok(SharePage {
        reply,
        version: version(&share, event_count, &mails, code_mails_spent.is_some()),
        code_mails_spent,
        is_final: share.file_deleted,
        share,
        handover,
        c,
        timeline: events,
        mails,
        can_revoke: status.can_be_ended(),
        can_unlock: status == SenderStatus::Locked,
        locked_browsers: crate::mail::lock_notice::browsers_text(t, timeline.wrong_code_browsers),
        fresh_link: None,
        notice: None,
        oob: false,
        csrf_token,
    })
}

#[derive(Deserialize)]
pub struct ShowQuery {
    /// The action that led here (`revoked`, `unlocked`, `unchanged`, `renewed`), for its notice.
    done: Option<String>,
}

/// GET /shares/{id}: with a fresh link just sent, the link too while its cookie lives (then the
/// notice says where it went instead).
#[handler]
pub async fn show(
    Context { c, state, session, req, .. }: Context<'_>,
    Path(id): Path<i64>,
    Query(query): Query<ShowQuery>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let (done, lang) = (query.done.as_deref(), c.lang);
    let csrf_token = session.form_token();
    let page = share_page(ShareView { c, user: &user }, state, id, &csrf_token).await?;
    // A link the share no longer takes (ended since) is not worth showing.
    let fresh_link = link_cookie::link(state, req.cookie(), link_cookie::ShownOn::SharePage, id)
        .filter(|_| done == Some(actions::RENEWED) && page.can_revoke);
    let notice = done.and_then(|done| actions::notice(lang, done)).filter(|_| fresh_link.is_none());
    render(&SharePage { notice, fresh_link, ..page })
}

#[derive(Deserialize)]
pub struct LiveQuery {
    /// The version the polling page shows.
    seen: Option<String>,
}

/// GET /shares/{id}/live: what the share page polls (HTMX only). No change since the version the
/// page shows: 204, and the page stays as it is. Otherwise the timeline in place of the old one,
/// the status into the (polite, live) status line, and the actions only if the outcome changed,
/// so a focused button stays where it is while the share is unchanged.
#[handler]
pub async fn live(
    Context { c, state, session, req, .. }: Context<'_>,
    Path(id): Path<i64>,
    Query(query): Query<LiveQuery>,
    // Taken as a result so that a plain request gets the 404 before any sign-in check.
    user: poem::Result<SignedIn>,
) -> poem::Result<Response> {
    if !is_htmx(req) {
        return Err(AppError::NotFound("the live fragment is for HTMX requests").into());
    }
    let SignedIn(user) = user?;
    let csrf_token = session.form_token();
    let view = ShareView { c, user: &user };
    let page = SharePage { oob: true, ..share_page(view, state, id, &csrf_token).await? };
    let seen = query.seen.unwrap_or_default();
    if seen == page.version {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let outcome_changed = seen.split('.').next() != Some(page.share.status);
    let mut fragment = page.as_live().render().map_err(AppError::from)?;
    fragment += &page.as_status().render().map_err(AppError::from)?;
    if outcome_changed {
        fragment += &page.as_actions().render().map_err(AppError::from)?;
    }
    Ok(Html(fragment).into_response())
}
