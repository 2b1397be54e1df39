//! The share page: the step a browser is at, with what its last form post did. A full page for a
//! plain request, only the step for htmx.

use std::time::Duration;

use askama::Template;
use poem::{IntoResponse, Request, Response, web::Html};

use super::{
    super::{AppError, AppState, Chrome, middleware::is_htmx, paths},
    reply::ReplyShown,
};
use crate::{
    db::Timestamp,
    i18n::{Lang, RecipientText, RequestText, format},
    request::{RequestLimits, UploadRefused},
    services::handover::{self, Blocked, CodeStatus, CodeStep},
    share::{FileInfo, Share},
};

/// Which step of the flow the page shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Email,
    Code,
    Blocked,
    Download,
    /// A file request's uploader, verified: the upload form and what arrived.
    Upload,
}

impl Step {
    pub fn name(&self) -> &'static str {
        match self {
            Step::Email => "email",
            Step::Code => "code",
            Step::Blocked => "blocked",
            Step::Download => "download",
            Step::Upload => "upload",
        }
    }
}

/// A file as the download step shows it.
pub struct FileView {
    /// Its place in the handover, which its own button posts to.
    pub position: i32,
    pub name: String,
    pub size: String,
    pub sha256: String,
}

/// The code step's status line: what the last post did.
pub struct StatusLine {
    pub text: String,
    /// A problem (red) rather than news (green).
    pub is_error: bool,
}

#[derive(Template)]
#[template(path = "recipient/share.html", blocks = ["step"])]
struct SharePage<'a> {
    c: Chrome,
    rf: &'static RecipientText,
    step: Step,
    sender_name: &'a str,
    /// The share's page (`/s/{token}`), below which its forms post.
    share_path: String,
    csrf_token: &'a str,
    /// The code step: the address typed; the email step: the one typed before, to correct.
    typed: String,
    status: Option<StatusLine>,
    lock_warning: Option<String>,
    /// The next code request is the last for a while: until when.
    last_request: Option<String>,
    /// Code requests are used up: when the next one may be made.
    blocked_until: Option<String>,
    /// The one file of a handover of one.
    file: Option<FileView>,
    /// The files of a handover of several (none for a handover of one).
    files: Vec<FileView>,
    /// How many files the handover holds: the page's words differ for several.
    file_count: i64,
    /// The words that say how many: "{sender} has sent you {n} files", "Download all ({n} …)".
    sent_by_after_many: String,
    download_all: String,
    message: &'a str,
    expires: String,
    /// The words of a file request; its heading ("{sender} asks you for files") is set for one.
    rq: &'static RequestText,
    request_heading: String,
    /// The upload step of a file request.
    upload: Option<UploadView>,
    /// The download step: "Reply with a file", or that the reply was made.
    reply: ReplyShown,
    reply_explain: String,
    /// A note's warning, with how many minutes it stays visible once shown.
    note_warning: String,
}

/// The upload step as the uploader sees it.
pub struct UploadView {
    /// "Up to 3 files, 10 MB each, 20 MB in all."
    pub limits: String,
    /// What the request still takes, for the browser's check before a byte is sent.
    pub room: Room,
    pub arrived: Vec<ArrivedView>,
    /// What the last upload or finish was refused for.
    pub refused: Option<String>,
}

/// What a request still takes: files, bytes in all (and in words), bytes per file (and in words).
pub struct Room {
    pub files: i64,
    pub bytes: i64,
    pub size: String,
    pub file_bytes: i64,
    pub file_size: String,
}

/// A file the uploader left, with the virus scan's word on it.
pub struct ArrivedView {
    pub position: i32,
    pub name: String,
    pub size: String,
    pub sha256: String,
    /// The scan's state code and its words, if the file is scanned.
    pub scan: Option<(&'static str, String)>,
    /// The scan refused it and its bytes are gone: nothing left to remove.
    pub refused: bool,
}

/// What a step shows besides the share itself.
#[derive(Default)]
struct Shown {
    typed: String,
    status: Option<StatusLine>,
    lock_warning: Option<String>,
    last_request: Option<String>,
    blocked_until: Option<String>,
    file: Option<FileView>,
    files: Vec<FileView>,
    upload: Option<UploadView>,
}

impl Shown {
    fn code(step: CodeStep, lang: Lang) -> Self {
        let rf = &lang.text().recipient;
        let lock_warning = step.lock_warning.map(|n| {
            let text = if n == 1 { rf.lock_warning_one } else { rf.lock_warning_many };
            text.replace("{n}", &n.to_string())
        });
        let last_request = last_request(step.last_request, lang);
        let status = status_line(step.status, lang);
        Self { typed: step.typed_address, status, lock_warning, last_request, ..Default::default() }
    }

    fn email(typed_before: String, last: Option<Timestamp>, lang: Lang) -> Self {
        Self { typed: typed_before, last_request: last_request(last, lang), ..Default::default() }
    }

    /// When to ask again: a time of day with its zone (the recipient's own is unknown) and the
    /// same wait in minutes.
    fn blocked(blocked: Blocked, lang: Lang) -> Self {
        let text = lang.text().recipient.blocked_until.replace("{time}", &format::clock_time(blocked.until, lang));
        Self { blocked_until: Some(text.replace("{minutes}", &blocked.minutes.to_string())), ..Default::default() }
    }

    /// The download step's files, sized in the visitor's language: the one file as always, or the
    /// list of several.
    fn download(files: Vec<FileInfo>, lang: Lang) -> Self {
        let mut views: Vec<FileView> = files
            .into_iter()
            .map(|file| FileView {
                position: file.position,
                size: format::human_size(file.size_bytes, lang),
                name: file.original_name,
                sha256: file.sha256,
            })
            .collect();
        if views.len() == 1 {
            return Self { file: views.pop(), ..Default::default() };
        }
        Self { files: views, ..Default::default() }
    }
}

/// The file request's upload step: its limits in words, what arrived, and a refusal to say.
fn upload_view(
    limits: RequestLimits,
    arrived: Vec<FileInfo>,
    refused: Option<UploadRefused>,
    lang: Lang,
) -> UploadView {
    let rq = &lang.text().request;
    let text = rq
        .limits
        .replace("{n}", &limits.max_files.to_string())
        .replace("{size}", &format::human_size(limits.max_file_bytes, lang))
        .replace("{total}", &format::human_size(limits.max_total_bytes, lang));
    // The step carries no unfinished uploads yet: the server's check counts them.
    let left = crate::request::Room::of(limits, &arrived, Default::default());
    let bytes = left.bytes.max(0);
    let room = Room {
        files: left.files.max(0),
        bytes,
        size: format::human_size(bytes, lang),
        file_bytes: limits.max_file_bytes,
        file_size: format::human_size(limits.max_file_bytes, lang),
    };
    let arrived = arrived
        .into_iter()
        .map(|file| ArrivedView {
            position: file.position,
            size: format::human_size(file.size_bytes, lang),
            refused: !crate::request::counts(&file),
            scan: file.scan_state.map(|state| {
                let words = rq.scan_mark(&lang.text().dashboard.scan, state, file.scan_finding.as_deref());
                (state.code(), words.replace('|', ""))
            }),
            name: file.original_name,
            sha256: file.sha256,
        })
        .collect();
    let refused = refused.map(|refused| {
        match refused {
            UploadRefused::TooManyFiles(_) => rq.refused_too_many,
            UploadRefused::FileTooLarge(_) => rq.refused_file_too_large,
            UploadRefused::TotalTooLarge(_) => rq.refused_total_too_large,
            UploadRefused::NoFile => rq.refused_no_file,
            UploadRefused::NothingArrived => rq.refused_nothing_arrived,
            UploadRefused::UploadUnfinished => rq.refused_upload_unfinished,
            UploadRefused::Closed => lang.text().request.answered_title,
        }
        .to_owned()
    });
    UploadView { limits: text, room, arrived, refused }
}

/// The delivery grace in whole minutes (at least one): how long a shown note stays visible.
fn grace_minutes(req: &Request) -> u64 {
    let grace = req.data::<AppState>().map_or(Duration::ZERO, |state| state.config.settings.delivery_grace);
    (grace.as_secs() / 60).max(1)
}

fn last_request(until: Option<Timestamp>, lang: Lang) -> Option<String> {
    until.map(|at| lang.text().recipient.last_request.replace("{time}", &format::clock_time(at, lang)))
}

fn status_line(status: CodeStatus, lang: Lang) -> Option<StatusLine> {
    let (t, rf) = (lang.text(), &lang.text().recipient);
    let error = |text: String| Some(StatusLine { text, is_error: true });
    let news = |text: String| Some(StatusLine { text, is_error: false });
    match status {
        CodeStatus::Quiet => None,
        CodeStatus::Wrong { tries_left } => error(format!("{} {tries_left}", t.recipient.code_wrong)),
        CodeStatus::Malformed => error(t.recipient.code_malformed.to_owned()),
        CodeStatus::Expired => error(t.recipient.code_expired.to_owned()),
        CodeStatus::Dead => error(t.recipient.code_dead.to_owned()),
        CodeStatus::Resent(at) => news(rf.code_resent.replace("{time}", &format::human_time(at, lang))),
        CodeStatus::Repeated(at) => news(rf.code_repeated.replace("{time}", &format::clock_time(at, lang))),
    }
}

/// Renders the step `step` of `share` for this request.
pub fn render_step(
    req: &Request,
    token: &str,
    share: &Share,
    csrf_token: &str,
    step: handover::Step,
    reply: ReplyShown,
) -> Result<Response, AppError> {
    render_page(req, token, share, csrf_token, step, None, reply)
}

/// The same, saying on the upload step what the last upload or finish was refused for.
pub fn render_step_refused(
    req: &Request,
    token: &str,
    share: &Share,
    csrf_token: &str,
    step: handover::Step,
    refused: Option<UploadRefused>,
) -> Result<Response, AppError> {
    render_page(req, token, share, csrf_token, step, refused, ReplyShown::default())
}

fn render_page(
    req: &Request,
    token: &str,
    share: &Share,
    csrf_token: &str,
    step: handover::Step,
    refused: Option<UploadRefused>,
    reply: ReplyShown,
) -> Result<Response, AppError> {
    let c = Chrome::for_request(req);
    let lang = c.lang;
    let (step, shown) = match step {
        handover::Step::Email { typed_before, last_request } => {
            (Step::Email, Shown::email(typed_before, last_request, lang))
        }
        handover::Step::Code(code) => (Step::Code, Shown::code(code, lang)),
        handover::Step::Blocked(blocked) => (Step::Blocked, Shown::blocked(blocked, lang)),
        handover::Step::Download(files) => (Step::Download, Shown::download(files, lang)),
        handover::Step::Upload { limits, arrived } => {
            (Step::Upload, Shown { upload: Some(upload_view(limits, arrived, refused, lang)), ..Default::default() })
        }
    };
    let rq = &lang.text().request;
    let request_heading =
        if share.is_request() { rq.asks_you.replace("{sender}", &share.sender_name) } else { String::new() };
    let rf = &lang.text().recipient;
    let count = share.file_count.to_string();
    let page = SharePage {
        c,
        rf,
        step,
        sender_name: &share.sender_name,
        share_path: paths::link(token),
        csrf_token,
        typed: shown.typed,
        status: shown.status,
        lock_warning: shown.lock_warning,
        last_request: shown.last_request,
        blocked_until: shown.blocked_until,
        file: shown.file,
        files: shown.files,
        file_count: share.file_count,
        sent_by_after_many: rf.many.sent_by_after.replace("{n}", &count),
        download_all: rf.many.download_all.replace("{n}", &count),
        message: &share.message,
        expires: format::human_time(share.expires_at, lang),
        rq,
        request_heading,
        upload: shown.upload,
        reply,
        reply_explain: rq.reply_explain.replace("{sender}", &share.sender_name),
        note_warning: rf.note.show_warning.replace("{minutes}", &grace_minutes(req).to_string()),
    };
    let html = if is_htmx(req) { page.as_step().render()? } else { page.render()? };
    Ok(Html(html).into_response())
}
