//! A file request's deadline against the uploader's last moves: an upload or a Finish in flight
//! while the GC collects the request that just ended. The request's end and a commit exclude each
//! other: what committed first is kept whole (a file the GC then removes with the request, an
//! answer the GC then leaves alone), what comes after is refused and keeps nothing, and no round
//! ends in between. Each race runs many rounds, the deadline passing at another point of the
//! uploader's request in each; time moves through the database, never by sleeping.

use watasu::maintenance::Trigger;

use crate::{
    both_backends,
    file_requests::{TestRequest, make_request, roomy, stored_files, upload, verify_uploader},
    lifecycle::{quiet_app, text},
    support::{Backend, Browser, Page, TestApp, count},
};

/// Rounds per race: each is one chance for a commit to slip past the request's end.
const ROUNDS: usize = 24;

/// What a round's uploader holds: the request, the verified browser and its form token.
struct Round {
    request: TestRequest,
    uploader: Browser,
    csrf: String,
}

impl Round {
    /// A fresh request and its verified uploader. The rate limits are cleared first: every
    /// round asks the same address for a code, and no limit is what a round tests.
    async fn start(app: &TestApp) -> Self {
        app.state.limiter.clear("").await.unwrap();
        let request = make_request(app, roomy()).await;
        let uploader = app.browser();
        let csrf = verify_uploader(app, &uploader, &request.token).await.csrf_token();
        Self { request, uploader, csrf }
    }

    async fn finish(&self) -> Page {
        self.uploader.post_form(&format!("/s/{}/finish", self.request.token), &[("csrf_token", &self.csrf)]).await
    }
}

/// The request's deadline passes now (while it is open: an answered request's keeping is not its
/// deadline), and a GC pass follows at once, so the collector meets the request as it ends. The
/// round's number of database round trips first moves that moment along the uploader's request.
async fn end_and_collect(app: &TestApp, request: &TestRequest, round: usize) {
    for _ in 0..round % 12 {
        count(app.db(), "SELECT count(*) FROM shares WHERE id = $1", request.id).await;
    }
    let open = format!("id = {} AND status = 'active'", request.id);
    app.set_ago("shares", &["expires_at"], 0, &open).await;
    collect(app).await;
}

async fn collect(app: &TestApp) {
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
}

async fn status(app: &TestApp, request: &TestRequest) -> String {
    text(app.db(), "SELECT status FROM shares WHERE id = $1", request.id).await
}

/// The request's files not purged.
async fn live_files(app: &TestApp, request: &TestRequest) -> i64 {
    const SQL: &str = "SELECT count(*) FROM files f JOIN shares s ON s.handover_id = f.handover_id
                        WHERE s.id = $1 AND f.purged_at IS NULL";
    count(app.db(), SQL, request.id).await
}

/// The "files arrived" mails queued for the request's sender (queued before Finish answers).
async fn arrival_mails(app: &TestApp, request: &TestRequest) -> i64 {
    const SQL: &str = "SELECT count(*) FROM mail_outbox WHERE share_id = $1 AND kind = 'files_arrived'";
    count(app.db(), SQL, request.id).await
}

/// A refusal answers the page of a request that takes nothing more, never an error.
fn assert_refused(page: &Page, what: &str, round: usize) {
    assert!(
        [404, 410, 422].contains(&page.status.as_u16()),
        "round {round}: {what} answered {}: {}",
        page.status,
        page.body
    );
}

async fn an_upload_at_the_requests_deadline_is_removed_with_it_or_refused_keeping_nothing(backend: Backend) {
    let app = quiet_app(backend).await;
    let mut committed = 0;
    for round in 0..ROUNDS {
        let Round { request, uploader, csrf } = Round::start(&app).await;
        let (sent, ()) = tokio::join!(
            upload(&uploader, &request.token, &csrf, &[("late.pdf", b"late")]),
            end_and_collect(&app, &request, round),
        );
        if sent.status == 303 {
            committed += 1;
        } else {
            assert_refused(&sent, "the upload", round);
        }
        // Committed or not, the request ended and was collected: the file is gone with it, or was
        // never kept; never a live file in an ended request, never its bytes left behind.
        assert_eq!(status(&app, &request).await, "purged", "round {round}");
        assert_eq!(live_files(&app, &request).await, 0, "round {round}: a file outlived its ended request");
        assert_eq!(stored_files(&app), 0, "round {round}: an upload's bytes were left on disk");
    }
    eprintln!("{committed} of {ROUNDS} uploads committed before the request ended");
}

async fn a_finish_at_the_requests_deadline_answers_it_or_is_refused_never_both(backend: Backend) {
    let app = quiet_app(backend).await;
    let mut answered: usize = 0;
    for round in 0..ROUNDS {
        let this = Round::start(&app).await;
        let request = &this.request;
        let sent = upload(&this.uploader, &request.token, &this.csrf, &[("signed.pdf", b"signed")]).await;
        assert_eq!(sent.status, 303, "{}", sent.body);
        let (finished, ()) = tokio::join!(this.finish(), end_and_collect(&app, request, round));
        if finished.status == 303 {
            // Answered before the collector closed it: that pass and the next leave it alone, the
            // file stays for the keeping, and the sender was told of it once.
            answered += 1;
            collect(&app).await;
            assert_eq!(status(&app, request).await, "consumed", "round {round}");
            assert_eq!(live_files(&app, request).await, 1, "round {round}: an answered request lost its file");
            assert_eq!(arrival_mails(&app, request).await, 1, "round {round}");
        } else {
            // Refused: the request ended unanswered, and nobody was told that files arrived.
            assert_refused(&finished, "the finish", round);
            assert_eq!(status(&app, request).await, "purged", "round {round}");
            assert_eq!(live_files(&app, request).await, 0, "round {round}");
            assert_eq!(arrival_mails(&app, request).await, 0, "round {round}: told of files the GC removed");
        }
        assert_eq!(stored_files(&app), answered, "round {round}: the bytes on disk are the answered requests'");
    }
    eprintln!("{answered} of {ROUNDS} finishes answered before the request ended");
}

both_backends!(
    an_upload_at_the_requests_deadline_is_removed_with_it_or_refused_keeping_nothing,
    a_finish_at_the_requests_deadline_answers_it_or_is_refused_never_both,
);
