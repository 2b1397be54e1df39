//! PostgreSQL stopped and started again (a cluster of this test's own) while browsers keep
//! asking: meanwhile every answer is quick, and a friendly 503 page wherever the database is
//! needed; afterwards everything works and nothing that was stored is gone. SQLite is part of the
//! process and has no server to stop, so this drill is PostgreSQL's alone.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
    time::{Duration, Instant},
};

use tokio::task::JoinHandle;

use super::{DbState, db_state, eventually};
use crate::support::{Backend, Browser, TestApp, TestShare, pg::PgCluster};

const DB_TIMEOUT: Duration = Duration::from_secs(2);
/// No answer may take longer: a request may wait for a connection twice (its session, then its
/// page) before it gives up, plus room for a busy machine. A hang guard, not a speed test.
const LONGEST_ANSWER: Duration = Duration::from_secs(2 * 2 + 5);

const UP: u8 = 0;
const STOPPING: u8 = 1;
const STOPPED: u8 = 2;
const STARTING: u8 = 3;
const BACK: u8 = 4;
const DONE: u8 = 5;

#[derive(Debug)]
struct Answer {
    route: &'static str,
    /// The phase when the request was sent and when its answer had arrived.
    phases: (u8, u8),
    status: u16,
    took: Duration,
    friendly: bool,
}

/// A browser with a session, on the landing page of `share`; returns it with its CSRF token.
async fn visitor(app: &TestApp, share: &TestShare) -> (Browser, String) {
    let browser = app.browser();
    let landing = browser.get_with(&format!("/s/{}", share.token), &[("Accept-Language", "en")]).await;
    assert_eq!(landing.status, 200, "{}", landing.body);
    let csrf = landing.csrf_token();
    (browser, csrf)
}

/// Sends one route's request again and again until the drill is done.
fn traffic(app: &TestApp, share: &TestShare, route: &'static str, phase: Arc<AtomicU8>) -> JoinHandle<Vec<Answer>> {
    let (base, token) = (app.base.clone(), share.token.clone());
    let unavailable = watasu::i18n::Lang::En.text().errors.unavailable.title;
    tokio::spawn(async move {
        let browser = Browser::new(&base);
        // Every route from a browser with a session: a probe that keeps cookies must get the
        // same health answers as one that does not.
        let csrf = match route {
            "landing" | "code" | "/healthz" | "/readyz" => browser.get(&format!("/s/{token}")).await.csrf_token(),
            _ => String::new(),
        };
        let english = [("Sec-Fetch-Site", "same-origin"), ("Accept-Language", "en")];
        let mut answers = Vec::new();
        loop {
            let at_start = phase.load(Ordering::SeqCst);
            if at_start == DONE {
                return answers;
            }
            let started = Instant::now();
            let page = match route {
                "landing" => browser.get_with(&format!("/s/{token}"), &english).await,
                "code" => {
                    let fields = [("csrf_token", csrf.as_str()), ("code", "000000")];
                    browser.post_form_with(&format!("/s/{token}/code"), &fields, &english).await
                }
                path => browser.get(path).await,
            };
            let body = page.body.to_lowercase();
            let friendly = page.header("content-type").is_some_and(|ct| ct.starts_with("text/html"))
                && page.body.contains(unavailable)
                && !body.contains("sqlx")
                && !body.contains("postgres");
            answers.push(Answer {
                route,
                phases: (at_start, phase.load(Ordering::SeqCst)),
                status: page.status.as_u16(),
                took: started.elapsed(),
                friendly,
            });
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}

/// `after` holds every row of `before` unchanged (it may hold more).
fn keeps_everything(before: &DbState, after: &DbState) {
    for (what, old, new) in [
        ("users", &before.users, &after.users),
        ("files", &before.files, &after.files),
        ("shares", &before.shares, &after.shares),
        ("events", &before.events, &after.events),
        ("outbox", &before.outbox, &after.outbox),
    ] {
        assert!(new.len() >= old.len() && new[..old.len()] == old[..], "{what} lost or changed: {old:?} -> {new:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_stopped_and_started_under_traffic_answers_503_meanwhile_and_loses_nothing() {
    let cluster = Arc::new(tokio::task::spawn_blocking(PgCluster::start).await.unwrap());
    let url = cluster.create_database().await;
    let app = TestApp::spawn_with(Backend::Postgres, |s| {
        s.database_url = Some(url.clone());
        s.db_timeout = DB_TIMEOUT;
    })
    .await;
    let share = app.create_share().await;
    let waiting = app.create_share().await;
    let (recipient, recipient_csrf) = visitor(&app, &waiting).await;

    let phase = Arc::new(AtomicU8::new(UP));
    let workers: Vec<_> = ["landing", "code", "/readyz", "/healthz"]
        .into_iter()
        .map(|route| traffic(&app, &share, route, phase.clone()))
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let before = db_state(app.db()).await;
    phase.store(STOPPING, Ordering::SeqCst);
    let stopping = cluster.clone();
    tokio::task::spawn_blocking(move || stopping.pg_ctl_stop()).await.unwrap();
    phase.store(STOPPED, Ordering::SeqCst);
    // Long enough for a request sent after the stop to wait out its timeout.
    tokio::time::sleep(DB_TIMEOUT * 5 / 2).await;
    phase.store(STARTING, Ordering::SeqCst);
    let starting = cluster.clone();
    tokio::task::spawn_blocking(move || starting.pg_ctl_start()).await.unwrap();
    let probe = app.browser();
    eventually(Duration::from_secs(20), "readiness after PostgreSQL came back", async || {
        probe.get("/readyz").await.status == 200
    })
    .await;
    phase.store(BACK, Ordering::SeqCst);
    // Long enough for a few answers per route even on a loaded machine.
    tokio::time::sleep(Duration::from_secs(4)).await;
    phase.store(DONE, Ordering::SeqCst);
    let mut answers = Vec::new();
    for worker in workers {
        answers.extend(worker.await.unwrap());
    }

    for answer in &answers {
        assert!(answer.took <= LONGEST_ANSWER, "a request hung: {answer:?}");
        // A code post answers 303 to the link's page, which says what came of it.
        let normal = if answer.route == "code" { 303 } else { 200 };
        match (answer.route, answer.status) {
            ("/healthz", status) => assert_eq!(status, 200, "{answer:?}"),
            (_, status) if status == normal => {}
            ("/readyz", 503) => {}
            (_, 503) => assert!(answer.friendly, "a 503 without the friendly page: {answer:?}"),
            _ => panic!("neither the page nor a 503: {answer:?}"),
        }
        let within = |phase: u8| answer.phases == (phase, phase);
        if within(STOPPED) && answer.route != "/healthz" {
            assert_eq!(answer.status, 503, "answered while the database was down: {answer:?}");
        }
        if within(UP) || within(BACK) {
            assert_eq!(answer.status, normal, "{answer:?}");
        }
    }
    for route in ["landing", "code", "/readyz"] {
        let down = answers.iter().filter(|a| a.route == route && a.phases == (STOPPED, STOPPED)).count();
        let back = answers.iter().filter(|a| a.route == route && a.phases == (BACK, BACK)).count();
        assert!(down >= 1 && back >= 2, "{route}: {down} answers during the outage, {back} after it");
    }

    // Nothing stored before the outage is gone or changed.
    let after = db_state(app.db()).await;
    keeps_everything(&before, &after);
    assert_eq!(after.shares, before.shares);

    // Everything works again: a recipient gets a code, verifies and downloads; a share is created.
    let asked = recipient
        .post_form(
            &format!("/s/{}/email", waiting.token),
            &[("csrf_token", &recipient_csrf), ("email", "recipient@example.test")],
        )
        .await;
    assert_eq!(asked.status, 303, "{}", asked.body);
    let code_step = recipient.follow(&waiting.token, asked).await;
    assert_eq!(code_step.status, 200, "{}", code_step.body);
    let code = app.smtp.wait_for(1, Duration::from_secs(15)).await[0].code().unwrap();
    let verified = recipient
        .post_form(&format!("/s/{}/code", waiting.token), &[("csrf_token", &code_step.csrf_token()), ("code", &code)])
        .await;
    assert_eq!(verified.status, 303, "{}", verified.body);
    let download_step = recipient.get(&format!("/s/{}", waiting.token)).await;
    let file = recipient.download(&waiting.token, &download_step.csrf_token()).await;
    assert_eq!(file.status(), 200);
    assert_eq!(file.bytes().await.unwrap().as_ref(), b"the file contents\n");
    let third = app.create_share().await;
    assert!(third.id > waiting.id);
    let end = db_state(app.db()).await;
    keeps_everything(&DbState { shares: Vec::new(), ..after.clone() }, &end);
    assert_eq!(end.shares[0], after.shares[0]);
    assert!(end.shares[1].contains(" consumed consumed:2"), "{:?}", end.shares);
    assert_eq!(end.shares.len(), 3);
    app.stop().await;
    let stopping = cluster.clone();
    tokio::task::spawn_blocking(move || stopping.pg_ctl_stop()).await.unwrap();
}
