//! A file request's deadline against the uploader's last moves: an upload or a Finish in flight
//! while the GC collects the request that just ended. The request's end and a commit exclude each
//! other: what committed first is kept whole (a file the GC then removes with the request, an
//! answer the GC then leaves alone), what comes after is refused and keeps nothing, and no round
//! ends in between. Each race runs many rounds, the deadline set through the database's clock to
//! pass at another point of the uploader's request in each, while GC passes run back to back
//! until the request has ended one way or the other; no round sleeps or waits for a quiet moment.
//! The window they aim at is PostgreSQL's, where a transaction's clock is the one it began with.

use std::time::{Duration, Instant};

use watasu::{
    db::{Dialect, Sql},
    maintenance::Trigger,
    on_db, sql,
};

use crate::{
    both_backends,
    file_requests::{TestRequest, make_request, roomy, stored_files, upload, verify_uploader},
    lifecycle::{quiet_app, text},
    support::{Backend, Browser, Page, TestApp, count},
};

/// Rounds per race: each is one chance for a commit to slip past the request's end.
const ROUNDS: usize = 36;

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

/// The open request's deadline `$2` seconds from now, by the database's clock (an answered
/// request's keeping is not its deadline).
const DEADLINE: Sql =
    sql!("UPDATE shares SET expires_at = " now " + " secs("$2") " WHERE id = $1 AND status = 'active'");

/// The request's deadline passes `ahead` from now, and GC passes run back to back until the
/// request has ended either way (collected, or answered): the collector is at work as the
/// deadline passes, wherever the uploader's request is then. `ahead` grows with the round, so the
/// deadline passes at another point of the uploader's request each round.
async fn collect_at_deadline(app: &TestApp, request: &TestRequest, ahead: Duration) {
    let ahead = ahead.as_secs_f64();
    on_db!(app.db(), |pool| sqlx::query(pool.sql(&DEADLINE))
        .bind(request.id)
        .bind(ahead)
        .execute(pool)
        .await
        .unwrap()
        .rows_affected());
    let started = Instant::now();
    while !matches!(status(app, request).await.as_str(), "purged" | "consumed") {
        assert!(started.elapsed() < Duration::from_secs(60), "the request neither ended nor was answered");
        collect(app).await;
    }
}

/// How far ahead round `round` sets the deadline: a part of `reference` (how long the round's
/// first upload took, on this machine at this moment) between `parts`, another each round, so
/// across the rounds it passes before, during and after the uploader's commit.
fn step(round: usize, reference: Duration, parts: (f64, f64)) -> Duration {
    let (from, to) = parts;
    reference.mul_f64(from + (to - from) * (round % 12) as f64 / 11.0)
}

/// A first file for the round's request, and how long its upload took.
async fn timed_upload(round: &Round, name: &str) -> Duration {
    let started = Instant::now();
    let sent = upload(&round.uploader, &round.request.token, &round.csrf, &[(name, b"first")]).await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    started.elapsed()
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
        let this = Round::start(&app).await;
        let reference = timed_upload(&this, "first.pdf").await;
        let Round { request, uploader, csrf } = &this;
        let (sent, ()) = tokio::join!(
            upload(uploader, &request.token, csrf, &[("late.pdf", b"late")]),
            collect_at_deadline(&app, request, step(round, reference, (0.4, 0.9))),
        );
        if sent.status == 303 {
            committed += 1;
        } else {
            assert_refused(&sent, "the upload", round);
        }
        // Committed or not, the request ended and was collected: the file is gone with it, or was
        // never kept; never a live file in an ended request, never its bytes left behind.
        assert_eq!(status(&app, request).await, "purged", "round {round}");
        assert_eq!(live_files(&app, request).await, 0, "round {round}: a file outlived its ended request");
        assert_eq!(stored_files(&app), 0, "round {round}: an upload's bytes were left on disk");
    }
    eprintln!("{committed} of {ROUNDS} late uploads committed before the request ended");
}

async fn a_finish_at_the_requests_deadline_answers_it_or_is_refused_never_both(backend: Backend) {
    let app = quiet_app(backend).await;
    let mut answered: usize = 0;
    for round in 0..ROUNDS {
        let this = Round::start(&app).await;
        let request = &this.request;
        let reference = timed_upload(&this, "signed.pdf").await;
        let (finished, ()) =
            tokio::join!(this.finish(), collect_at_deadline(&app, request, step(round, reference, (0.05, 0.45))));
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
