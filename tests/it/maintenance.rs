//! Maintenance that proves itself (seed 004): sweeps that re-check expiry at delete time under a
//! cutoff fixed once per run, the run ledger and its items, leases that a dead run gives up by
//! expiring, the authenticated trigger (202, Idempotency-Key, 429, 401), the admin pages, the
//! CLI, and a ledger that never holds an address, a token or a file name.

use std::{collections::HashSet, time::Duration};

use reqwest::StatusCode;
use sqlx::Row;
use watasu::{
    db::Db,
    lifecycle::{LifecycleRepository, ShareGc},
    maintenance::{Budget, Kind, Trigger},
    share::ShareEvents,
};

use crate::{
    both_backends,
    support::{Backend, Browser, TestApp, count, execute, process::run_watasu},
};

pub(crate) const TOKEN: &str = "maintenance-token-0123456789abcdef0123456789";
const PASSWORD: &str = "lantern orchard seventeen copper";

/// An app whose own timer stays out of the way (its start-up run is over when this returns).
pub(crate) async fn quiet_app(backend: Backend) -> TestApp {
    TestApp::spawn_settled(backend, |s| {
        s.access_time_gc = false;
        s.maintenance_interval = Duration::from_secs(24 * 3600);
        s.maintenance_token = Some(watasu::secret::SecretString::new(TOKEN));
    })
    .await
}

/// Runs one statement given in each dialect, without parameters.
pub(crate) async fn sql(db: &Db, sqlite: &'static str, postgres: &'static str) -> u64 {
    match db {
        Db::Sqlite(pool) => sqlx::query(sqlite).execute(pool).await.unwrap().rows_affected(),
        Db::Postgres(pool) => sqlx::query(postgres).execute(pool).await.unwrap().rows_affected(),
    }
}

#[derive(Clone, Copy)]
pub(crate) enum SessionAge {
    /// Past its absolute expiry.
    Expired,
    /// Idle longer than the idle timeout (12 h), absolute expiry still ahead.
    Idle,
    /// Expires this many seconds from now.
    ExpiresIn(f64),
}

/// Inserts `n` sessions; returns their ids in order.
pub(crate) async fn insert_sessions(db: &Db, n: usize, age: SessionAge) -> Vec<i64> {
    let (expires, seen) = match age {
        SessionAge::Expired => (-10.0, -20.0),
        SessionAge::Idle => (3600.0, -13.0 * 3600.0),
        SessionAge::ExpiresIn(secs) => (secs, 0.0),
    };
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let hash = watasu::secret::random_token().expose().to_owned();
        let id: i64 = match db {
            Db::Sqlite(pool) => sqlx::query_scalar(
                "INSERT INTO sessions (id_hash, csrf_secret, expires_at, last_seen_at)
                 VALUES ($1, 'x', unixepoch('subsec') + $2, unixepoch('subsec') + $3) RETURNING id",
            )
            .bind(hash)
            .bind(expires)
            .bind(seen)
            .fetch_one(pool)
            .await
            .unwrap(),
            Db::Postgres(pool) => sqlx::query_scalar(
                "INSERT INTO sessions (id_hash, csrf_secret, expires_at, last_seen_at)
                 VALUES ($1, 'x', now() + make_interval(secs => $2), now() + make_interval(secs => $3)) RETURNING id",
            )
            .bind(hash)
            .bind(expires)
            .bind(seen)
            .fetch_one(pool)
            .await
            .unwrap(),
        };
        ids.push(id);
    }
    ids
}

pub(crate) async fn session_exists(db: &Db, id: i64) -> bool {
    count(db, "SELECT count(*) FROM sessions WHERE id = $1", id).await == 1
}

/// The session comes back: it is used again and its expiry moves on, as a live request does.
pub(crate) async fn renew_session(db: &Db, id: i64) {
    execute(
        db,
        "UPDATE sessions SET last_seen_at = unixepoch('subsec'), expires_at = unixepoch('subsec') + 3600 WHERE id = $1",
        "UPDATE sessions SET last_seen_at = now(), expires_at = now() + interval '1 hour' WHERE id = $1",
        id,
    )
    .await;
}

pub(crate) async fn item_outcome(db: &Db, run_id: i64, target_id: i64) -> String {
    let sql = "SELECT outcome FROM maintenance_items WHERE run_id = $1 AND target_id = $2";
    match db {
        Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(run_id).bind(target_id).fetch_one(pool).await.unwrap(),
        Db::Postgres(pool) => sqlx::query_scalar(sql).bind(run_id).bind(target_id).fetch_one(pool).await.unwrap(),
    }
}

/// Moves a run's start (and so its cutoff) `seconds` into the past.
async fn move_cutoff_back(db: &Db, run_id: i64, seconds: i64) {
    let sqlite = "UPDATE maintenance_runs SET cutoff = cutoff - $2, started_at = started_at - $2 WHERE id = $1";
    let postgres = "UPDATE maintenance_runs SET cutoff = cutoff - interval '1 second' * $2,
                           started_at = started_at - interval '1 second' * $2 WHERE id = $1";
    match db {
        Db::Sqlite(pool) => sqlx::query(sqlite).bind(run_id).bind(seconds).execute(pool).await.unwrap().rows_affected(),
        Db::Postgres(pool) => {
            sqlx::query(postgres).bind(run_id).bind(seconds).execute(pool).await.unwrap().rows_affected()
        }
    };
}

async fn http_runs(app: &TestApp) -> i64 {
    count(app.db(), "SELECT count(*) FROM maintenance_runs WHERE trigger = 'http' AND id > $1", 0).await
}

pub(crate) fn small_budget(batch_size: u32, max_batches: u32) -> Budget {
    Budget { batch_size, max_batches, max_time: Duration::from_secs(60) }
}

async fn post_trigger(app: &TestApp, token: Option<&str>, key: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new().post(format!("{}/maintenance/runs", app.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.send().await.unwrap()
}

async fn get_run(app: &TestApp, location: &str) -> serde_json::Value {
    let response =
        reqwest::Client::new().get(format!("{}{location}", app.base)).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(response.status(), 200);
    serde_json::from_str(&response.text().await.unwrap()).unwrap()
}

/// Polls the run until it has finished.
async fn finished_run(app: &TestApp, location: &str) -> serde_json::Value {
    for _ in 0..200 {
        let body = get_run(app, location).await;
        if ["succeeded", "partial", "failed"].contains(&body["run"]["state"].as_str().unwrap()) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the run at {location} never finished");
}

both_backends! {
    async fn a_session_renewed_between_scan_and_delete_survives(backend: Backend) {
        let app = quiet_app(backend).await;
        let db = app.db();
        let ids = insert_sessions(db, 3, SessionAge::Expired).await;
        let m = &app.state.maintenance;
        let (run, _) = m.ledger().accept(Kind::Sessions, Trigger::Cli, "toctou").await.unwrap();
        let cutoff = m.ledger().start(run.id).await.unwrap().expect("the run starts").cutoff.unwrap();
        let sweep = m.sweep(Kind::Sessions);
        let mut walk = sweep.start(db.clone(), run.id, cutoff);
        let scanned = walk.scan(100).await.unwrap();
        assert_eq!(scanned, ids, "the scan finds the three expired sessions");

        renew_session(db, ids[0]).await;
        let report = walk.apply(&scanned).await.unwrap();

        assert_eq!((report.deleted, report.skipped, report.already_gone), (2, 1, 0));
        assert!(session_exists(db, ids[0]).await, "the renewed session survives");
        assert!(!session_exists(db, ids[1]).await && !session_exists(db, ids[2]).await);
        assert_eq!(item_outcome(db, run.id, ids[0]).await, "skipped");
        assert_eq!(item_outcome(db, run.id, ids[1]).await, "deleted");
    }

    async fn the_cutoff_is_fixed_when_the_run_starts(backend: Backend) {
        let app = quiet_app(backend).await;
        let db = app.db();
        let expired = insert_sessions(db, 4, SessionAge::Expired).await;
        let expiring_soon = insert_sessions(db, 4, SessionAge::ExpiresIn(3600.0)).await;
        let m = &app.state.maintenance;
        let (run, _) = m.ledger().accept(Kind::Sessions, Trigger::Cli, "cutoff").await.unwrap();
        let started = m.ledger().start(run.id).await.unwrap().unwrap().cutoff.unwrap();
        // Time moves through the database: the run started 8 s ago (its cutoff with it), and the
        // "soon" sessions expired 4 s ago, after that cutoff but before the clock's now.
        move_cutoff_back(db, run.id, 8).await;
        let cutoff = m.ledger().get(run.id).await.unwrap().unwrap().cutoff.unwrap();
        assert!(cutoff < started);
        for id in &expiring_soon {
            execute(
                db,
                "UPDATE sessions SET expires_at = unixepoch('subsec') - 4 WHERE id = $1",
                "UPDATE sessions SET expires_at = now() - interval '4 seconds' WHERE id = $1",
                *id,
            )
            .await;
        }
        let sweep = m.sweep(Kind::Sessions);
        let mut walk = sweep.start(db.clone(), run.id, cutoff);
        let first = walk.scan(2).await.unwrap();
        assert_eq!(walk.apply(&first).await.unwrap().deleted, 2);

        // The rest of the run happens after the "soon" sessions have expired by the clock.
        loop {
            let batch = walk.scan(2).await.unwrap();
            if batch.is_empty() {
                break;
            }
            walk.apply(&batch).await.unwrap();
        }

        for id in &expired {
            assert!(!session_exists(db, *id).await, "expired before the cutoff: deleted");
        }
        for id in &expiring_soon {
            assert!(session_exists(db, *id).await, "expired after the cutoff: left for the next run");
        }
        let ledger_cutoff = m.ledger().get(run.id).await.unwrap().unwrap().cutoff.unwrap();
        assert_eq!(ledger_cutoff, cutoff, "the ledger keeps the cutoff the run started with");

        // The next run, with its own later cutoff, takes them.
        let next = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
        assert_eq!((next.state.as_str(), next.deleted), ("succeeded", 4));
        assert!(next.cutoff.unwrap() > cutoff);
    }

    async fn a_run_stops_at_its_batch_cap_and_the_next_run_finishes(backend: Backend) {
        let app = quiet_app(backend).await;
        insert_sessions(app.db(), 10, SessionAge::Expired).await;
        let m = app.state.maintenance.clone().with_budget(small_budget(3, 2));
        let capped = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
        assert_eq!((capped.state.as_str(), capped.deleted, capped.batches), ("partial", 6, 2));
        assert!(capped.note.as_deref().unwrap().contains("batch cap"), "{:?}", capped.note);

        let rest = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
        assert_eq!((rest.state.as_str(), rest.deleted), ("succeeded", 4));

        let no_time = app.state.maintenance.clone().with_budget(Budget { max_time: Duration::ZERO, ..small_budget(3, 9) });
        insert_sessions(app.db(), 1, SessionAge::Expired).await;
        let timed_out = no_time.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
        assert_eq!((timed_out.state.as_str(), timed_out.deleted), ("partial", 0));
        assert!(timed_out.note.as_deref().unwrap().contains("time cap"));
    }

    async fn items_record_every_outcome(backend: Backend) {
        let app = quiet_app(backend).await;
        let db = app.db();
        let ids = insert_sessions(db, 3, SessionAge::Expired).await;
        let m = &app.state.maintenance;
        let (run, _) = m.ledger().accept(Kind::Sessions, Trigger::Cli, "outcomes").await.unwrap();
        let cutoff = m.ledger().start(run.id).await.unwrap().unwrap().cutoff.unwrap();
        let sweep = m.sweep(Kind::Sessions);
        let mut walk = sweep.start(db.clone(), run.id, cutoff);
        let scanned = walk.scan(10).await.unwrap();
        renew_session(db, ids[0]).await;
        execute(db, "DELETE FROM sessions WHERE id = $1", "DELETE FROM sessions WHERE id = $1", ids[1]).await;
        walk.apply(&scanned).await.unwrap();
        assert_eq!(item_outcome(db, run.id, ids[0]).await, "skipped");
        assert_eq!(item_outcome(db, run.id, ids[1]).await, "already_gone");
        assert_eq!(item_outcome(db, run.id, ids[2]).await, "deleted");

        // A file that cannot be deleted: the GC's item says failed, with a reason that names no path.
        let share = app.create_share().await;
        app.expire_share(share.id).await;
        let key: String = match db {
            Db::Sqlite(pool) => sqlx::query_scalar("SELECT f.storage_key FROM shares s JOIN files f ON f.id = s.file_id WHERE s.id = $1").bind(share.id).fetch_one(pool).await.unwrap(),
            Db::Postgres(pool) => sqlx::query_scalar("SELECT f.storage_key FROM shares s JOIN files f ON f.id = s.file_id WHERE s.id = $1").bind(share.id).fetch_one(pool).await.unwrap(),
        };
        let path = app.data_dir.path().join("files").join(&key);
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), b"x").unwrap();
        let repo = LifecycleRepository::new(db.clone(), Duration::ZERO, Duration::from_secs(3600));
        let gc = ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(db.clone()));
        assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().failed, 1);
        let gc_run = count(db, "SELECT max(id) FROM maintenance_runs WHERE kind = 'share_gc' AND id > $1", 0).await;
        assert_eq!(item_outcome(db, gc_run, share.id).await, "failed");
        let reason: String = match db {
            Db::Sqlite(pool) => sqlx::query_scalar("SELECT reason FROM maintenance_items WHERE run_id = $1").bind(gc_run).fetch_one(pool).await.unwrap(),
            Db::Postgres(pool) => sqlx::query_scalar("SELECT reason FROM maintenance_items WHERE run_id = $1").bind(gc_run).fetch_one(pool).await.unwrap(),
        };
        assert!(!reason.is_empty() && !reason.contains(&key) && !reason.contains('/'), "{reason}");
        let gc_state = m.ledger().get(gc_run).await.unwrap().unwrap().state;
        assert_eq!(gc_state, "partial");

        // The GC heals once the file can go; its run records the share as deleted.
        std::fs::remove_dir_all(&path).unwrap();
        execute(db, "UPDATE shares SET next_purge_attempt_at = NULL WHERE id = $1", "UPDATE shares SET next_purge_attempt_at = NULL WHERE id = $1", share.id).await;
        assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().purged, 1);
        let healed = count(db, "SELECT max(id) FROM maintenance_runs WHERE kind = 'share_gc' AND id > $1", 0).await;
        assert_eq!(item_outcome(db, healed, share.id).await, "deleted");
        // A pass that finds nothing writes nothing.
        assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().purged, 0);
        assert_eq!(count(db, "SELECT max(id) FROM maintenance_runs WHERE kind = 'share_gc' AND id > $1", 0).await, healed);
    }

    async fn each_sweep_removes_only_what_has_expired(backend: Backend) {
        let app = quiet_app(backend).await;
        let db = app.db();
        let expired = insert_sessions(db, 2, SessionAge::Expired).await;
        let idle = insert_sessions(db, 1, SessionAge::Idle).await;
        let live = insert_sessions(db, 2, SessionAge::ExpiresIn(3600.0)).await;
        let sender = app.create_sender("keeper@example.test", "Keeper").await;
        // Codes: expired two hours ago, expired a minute ago, still live.
        let share = app.create_share_with(sender, "someone@example.test", "a.txt", b"a", Duration::from_secs(3600)).await;
        for (mac, offset) in [("old", -7200.0), ("recent", -60.0), ("live", 600.0)] {
            match db {
                Db::Sqlite(pool) => sqlx::query("INSERT INTO otp_challenges (share_id, session_id, code_mac, expires_at) VALUES ($1, $2, $3, unixepoch('subsec') + $4)")
                    .bind(share.id).bind(live[0]).bind(mac).bind(offset).execute(pool).await.unwrap().rows_affected(),
                Db::Postgres(pool) => sqlx::query("INSERT INTO otp_challenges (share_id, session_id, code_mac, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))")
                    .bind(share.id).bind(live[0]).bind(mac).bind(offset).execute(pool).await.unwrap().rows_affected(),
            };
        }
        // Invitations: used 8 days ago, expired 8 days ago, expired yesterday, pending.
        for (email, used, expires) in [("used@x.test", Some(-8.0), 1.0), ("old@x.test", None, -8.0), ("recent@x.test", None, -1.0), ("open@x.test", None, 2.0)] {
            let days = 24.0 * 3600.0;
            match db {
                Db::Sqlite(pool) => sqlx::query("INSERT INTO invitations (token_hash, email, expires_at, used_at) VALUES ($1, $1, unixepoch('subsec') + $2, unixepoch('subsec') + $3)")
                    .bind(email).bind(expires * days).bind(used.map(|u| u * days)).execute(pool).await.unwrap().rows_affected(),
                Db::Postgres(pool) => sqlx::query("INSERT INTO invitations (token_hash, email, expires_at, used_at) VALUES ($1, $1, now() + make_interval(secs => $2), now() + make_interval(secs => $3))")
                    .bind(email).bind(expires * days).bind(used.map(|u| u * days)).execute(pool).await.unwrap().rows_affected(),
            };
        }
        // Mails: sent 31 days ago, dead 31 days ago, pending 31 days ago, sent yesterday.
        for (status, age_days) in [("sent", 31.0), ("dead", 31.0), ("pending", 31.0), ("sent", 1.0)] {
            let age = age_days * 24.0 * 3600.0;
            let sent_at = (status == "sent").then_some(age);
            match db {
                Db::Sqlite(pool) => sqlx::query("INSERT INTO mail_outbox (kind, recipient, message, status, created_at, sent_at) VALUES ('share_notification', $1, CASE WHEN $1 = 'sent' THEN X'' ELSE X'41' END, $1, unixepoch('subsec') - $2, unixepoch('subsec') - $3)")
                    .bind(status).bind(age).bind(sent_at).execute(pool).await.unwrap().rows_affected(),
                Db::Postgres(pool) => sqlx::query("INSERT INTO mail_outbox (kind, recipient, message, status, created_at, sent_at) VALUES ('share_notification', $1, CASE WHEN $1 = 'sent' THEN ''::bytea ELSE 'A'::bytea END, $1, now() - make_interval(secs => $2), now() - make_interval(secs => $3))")
                    .bind(status).bind(age).bind(sent_at).execute(pool).await.unwrap().rows_affected(),
            };
        }
        // Rate-limit hits: two days old, and fresh.
        sql(db,
            "INSERT INTO rate_limit_hits (bucket, at) VALUES ('old', unixepoch('subsec') - 172800), ('fresh', unixepoch('subsec'))",
            "INSERT INTO rate_limit_hits (bucket, at) VALUES ('old', now() - interval '2 days'), ('fresh', now())").await;

        let run = app.state.maintenance.run_now(Kind::All, Trigger::Cli).await.unwrap();
        assert_eq!(run.state, "succeeded", "{:?}", run.note);

        for id in expired.iter().chain(&idle) {
            assert!(!session_exists(db, *id).await, "expired or idle session {id} is deleted");
        }
        for id in &live {
            assert!(session_exists(db, *id).await, "live session {id} stays");
        }
        let text_set = |sql: &'static str| async move {
            let values: Vec<String> = match db {
                Db::Sqlite(pool) => sqlx::query_scalar(sql).fetch_all(pool).await.unwrap(),
                Db::Postgres(pool) => sqlx::query_scalar(sql).fetch_all(pool).await.unwrap(),
            };
            values.into_iter().collect::<HashSet<_>>()
        };
        assert_eq!(text_set("SELECT code_mac FROM otp_challenges").await, HashSet::from(["recent".into(), "live".into()]));
        assert_eq!(
            text_set("SELECT email FROM invitations").await,
            HashSet::from(["recent@x.test".into(), "open@x.test".into()])
        );
        let mails = text_set("SELECT recipient || ':' || CAST(CAST(sent_at IS NULL AS INTEGER) AS TEXT) FROM mail_outbox").await;
        assert_eq!(mails, HashSet::from(["pending:1".into(), "sent:0".into()]), "old sent and dead mails go");
        assert_eq!(text_set("SELECT bucket FROM rate_limit_hits WHERE bucket IN ('old', 'fresh')").await, HashSet::from(["fresh".into()]));
        let summary = app.state.maintenance.ledger().summary(run.id).await.unwrap();
        let kinds: HashSet<_> = summary.iter().map(|s| s.target_kind.as_str()).collect();
        assert_eq!(kinds, HashSet::from(["session", "code", "invitation", "mail", "rate_limit_hit"]));
    }

    async fn the_retention_sweep_scrubs_old_purged_shares_and_leaves_recent_ones(backend: Backend) {
        let app = quiet_app(backend).await;
        let db = app.db();
        let sender = app.create_sender_with_password("keeper@example.test", "Keeper", PASSWORD).await;
        let mut shares = Vec::new();
        for name in ["old-purged.pdf", "recent-purged.pdf", "old-active.pdf"] {
            let share = app.create_share_with(sender, "friend@example.test", name, b"bytes", Duration::from_secs(3600)).await;
            shares.push(share.id);
        }
        let [old, recent, active] = [shares[0], shares[1], shares[2]];
        for id in [old, recent] {
            app.expire_share(id).await;
        }
        let repo = LifecycleRepository::new(db.clone(), Duration::ZERO, Duration::from_secs(3600));
        let gc = ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(db.clone()));
        assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().purged, 2);
        execute(db,
            "UPDATE shares SET purged_at = unixepoch('subsec') - 31 * 86400, created_at = unixepoch('subsec') - 40 * 86400 WHERE id = $1",
            "UPDATE shares SET purged_at = now() - interval '31 days', created_at = now() - interval '40 days' WHERE id = $1", old).await;
        execute(db,
            "UPDATE shares SET created_at = unixepoch('subsec') - 40 * 86400 WHERE id = $1",
            "UPDATE shares SET created_at = now() - interval '40 days' WHERE id = $1", active).await;

        let run = app.state.maintenance.run_now(Kind::ShareRetention, Trigger::Cli).await.unwrap();
        assert_eq!((run.state.as_str(), run.deleted), ("succeeded", 1));

        let personal = |id: i64| async move {
            let sql = "SELECT s.recipient_email || '|' || s.message || '|' || f.original_name FROM shares s JOIN files f ON f.id = s.file_id WHERE s.id = $1";
            let value: String = match db {
                Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(id).fetch_one(pool).await.unwrap(),
                Db::Postgres(pool) => sqlx::query_scalar(sql).bind(id).fetch_one(pool).await.unwrap(),
            };
            value
        };
        assert_eq!(personal(old).await, "||", "recipient, message and file name are gone");
        assert_eq!(personal(recent).await, "friend@example.test|Here is the file.|recent-purged.pdf");
        assert_eq!(personal(active).await, "friend@example.test|Here is the file.|old-active.pdf");
        // What the statistics need stays.
        assert_eq!(count(db, "SELECT count(*) FROM shares s JOIN files f ON f.id = s.file_id WHERE s.id = $1 AND f.size_bytes = 5 AND s.status = 'purged'", old).await, 1);
        assert_eq!(item_outcome(db, run.id, old).await, "deleted");
        // The sender's page says what happened instead of showing blanks.
        let page = signed_in(&app, "keeper@example.test").await.get(&format!("/shares/{old}")).await;
        assert_eq!(page.status, 200);
        assert!(page.body.contains("保存期間を過ぎたため消去") && !page.body.contains("old-purged.pdf"), "{}", page.body);
        // Scrubbed shares are not looked at again.
        let again = app.state.maintenance.run_now(Kind::ShareRetention, Trigger::Cli).await.unwrap();
        assert_eq!(again.deleted + again.skipped + again.already_gone, 0);
    }

    async fn the_trigger_answers_202_with_a_location_and_runs_in_the_background(backend: Backend) {
        let app = quiet_app(backend).await;
        let expired = insert_sessions(app.db(), 3, SessionAge::Expired).await;
        let response = post_trigger(&app, Some(TOKEN), Some("ping-2026-11-30T02:00")).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        assert!(location.starts_with("/maintenance/runs/"), "{location}");
        let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(body["run"]["trigger"], "http");
        assert_eq!(body["run"]["kind"], "all");

        let done = finished_run(&app, &location).await;
        assert_eq!(done["run"]["state"], "succeeded", "{done}");
        assert_eq!(done["run"]["deleted"], 3);
        assert!(done["items"].as_array().unwrap().iter().any(|i| i["target_kind"] == "session" && i["count"] == 3));
        for id in expired {
            assert!(!session_exists(app.db(), id).await);
        }

        // Another trigger at once: too soon.
        let again = post_trigger(&app, Some(TOKEN), Some("another-key")).await;
        assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
        let wait: u64 = again.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=60).contains(&wait), "{wait}");
        assert_eq!(http_runs(&app).await, 1);

        // Bad requests change nothing.
        let bad_kind = reqwest::Client::new().post(format!("{}/maintenance/runs?kind=users", app.base)).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(bad_kind.status(), StatusCode::BAD_REQUEST);
        let bad_key = post_trigger(&app, Some(TOKEN), Some(&"k".repeat(300))).await;
        assert_eq!(bad_key.status(), StatusCode::BAD_REQUEST);
        let unknown = reqwest::Client::new().get(format!("{}/maintenance/runs/999999", app.base)).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
        assert_eq!(http_runs(&app).await, 1);
    }

    async fn the_same_idempotency_key_twice_gives_one_run(backend: Backend) {
        let app = quiet_app(backend).await;
        let first = post_trigger(&app, Some(TOKEN), Some("nightly-2026-11-30")).await;
        assert_eq!(first.status(), StatusCode::ACCEPTED);
        let location = first.headers()["location"].to_str().unwrap().to_owned();
        finished_run(&app, &location).await;
        let second = post_trigger(&app, Some(TOKEN), Some("nightly-2026-11-30")).await;
        assert_eq!(second.status(), StatusCode::ACCEPTED, "a replay, not 429");
        assert_eq!(second.headers()["location"].to_str().unwrap(), location);
        let body: serde_json::Value = serde_json::from_str(&second.text().await.unwrap()).unwrap();
        assert_eq!(body["run"]["state"], "succeeded", "the replay shows the same run, finished");
        assert_eq!(http_runs(&app).await, 1);
        // The key is kept only as a hash.
        assert_eq!(count(app.db(), "SELECT count(*) FROM maintenance_runs WHERE idempotency_key_hash LIKE '%nightly%' AND id > $1", 0).await, 0);
    }

    async fn concurrent_triggers_make_one_run(backend: Backend) {
        let app = quiet_app(backend).await;
        let client = reqwest::Client::new();
        let base = app.base.clone();
        // Sixteen pingers at once, half with one shared key, half with keys of their own.
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let (client, base) = (client.clone(), base.clone());
                let key = if i % 2 == 0 { "shared-key".to_owned() } else { format!("own-key-{i}") };
                tokio::spawn(async move {
                    let response = client.post(format!("{base}/maintenance/runs")).bearer_auth(TOKEN).header("Idempotency-Key", key).send().await.unwrap();
                    (response.status(), response.headers().get("location").map(|l| l.to_str().unwrap().to_owned()))
                })
            })
            .collect();
        let mut locations = HashSet::new();
        for task in tasks {
            let (status, location) = task.await.unwrap();
            match status {
                StatusCode::ACCEPTED => {
                    locations.insert(location.unwrap());
                }
                StatusCode::TOO_MANY_REQUESTS => {}
                other => panic!("unexpected {other}"),
            }
        }
        assert_eq!(locations.len(), 1, "every accepted trigger names the same run: {locations:?}");
        assert_eq!(http_runs(&app).await, 1);
    }

    async fn a_wrong_or_missing_token_gets_401_and_creates_nothing(backend: Backend) {
        let app = quiet_app(backend).await;
        let before = count(app.db(), "SELECT count(*) FROM maintenance_runs WHERE id > $1", 0).await;
        let wrong = format!("{TOKEN}x");
        for token in [None, Some("wrong"), Some(wrong.as_str()), Some(""), Some(&TOKEN[..TOKEN.len() - 1])] {
            let response = post_trigger(&app, token, Some("k")).await;
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{token:?}");
            assert_eq!(response.headers()["www-authenticate"], "Bearer");
        }
        let basic = reqwest::Client::new()
            .post(format!("{}/maintenance/runs", app.base))
            .header("Authorization", format!("Basic {TOKEN}"))
            .send()
            .await
            .unwrap();
        assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);
        let read = reqwest::Client::new().get(format!("{}/maintenance/runs/1", app.base)).bearer_auth("wrong").send().await.unwrap();
        assert_eq!(read.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(count(app.db(), "SELECT count(*) FROM maintenance_runs WHERE id > $1", 0).await, before);
        assert_eq!(count(app.db(), "SELECT count(*) FROM maintenance_leases WHERE length(name) > $1", 0).await, 0);
    }

    async fn without_a_configured_token_the_trigger_does_not_exist(backend: Backend) {
        let app = TestApp::spawn_settled(backend, |s| s.maintenance_interval = Duration::from_secs(24 * 3600)).await;
        let response = post_trigger(&app, Some(TOKEN), None).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(http_runs(&app).await, 0);
    }

    async fn the_ledger_never_holds_an_address_a_token_or_a_file_name(backend: Backend) {
        let app = quiet_app(backend).await;
        let db = app.db();
        let sender_email = "sender.private@example.test";
        let recipient = "Recipient.Private@Example.test";
        let file_name = "給与明細-secret-report.pdf";
        let sender = app.create_sender(sender_email, "Private Sender").await;
        let share = app.create_share_with(sender, recipient, file_name, b"private bytes", Duration::from_secs(3600)).await;
        // The recipient asks for a code: a session, a code, rate-limit hits and a mail.
        let browser = Browser::new(&app.base);
        let landing = browser.get(&format!("/s/{}", share.token)).await;
        let asked = browser.post_form(&format!("/s/{}/email", share.token), &[("csrf_token", &landing.csrf_token()), ("email", recipient)]).await;
        assert_eq!(asked.status, 200);
        app.smtp.wait_for(1, Duration::from_secs(10)).await;
        let invitation = watasu::accounts::invitations::Invitations::new(db.clone())
            .create(&watasu::accounts::EmailAddress::parse("invited.private@example.test").unwrap(), watasu::accounts::Role::Sender, sender)
            .await
            .unwrap();
        sql(db, "INSERT INTO mail_outbox (kind, recipient, message, status, sent_at) VALUES ('share_notification', 'mailbox.private@example.test', X'', 'sent', unixepoch('subsec'))",
            "INSERT INTO mail_outbox (kind, recipient, message, status, sent_at) VALUES ('share_notification', 'mailbox.private@example.test', ''::bytea, 'sent', now())").await;
        // Everything ages past its keep time, the share is collected, then everything is swept.
        app.expire_share(share.id).await;
        let repo = LifecycleRepository::new(db.clone(), Duration::ZERO, Duration::from_secs(3600));
        ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(db.clone())).collect(10, Trigger::Cli).await.unwrap();
        sql(db, "UPDATE sessions SET expires_at = unixepoch('subsec') - 1", "UPDATE sessions SET expires_at = now() - interval '1 second'").await;
        sql(db, "UPDATE otp_challenges SET expires_at = unixepoch('subsec') - 7200", "UPDATE otp_challenges SET expires_at = now() - interval '2 hours'").await;
        sql(db, "UPDATE invitations SET expires_at = unixepoch('subsec') - 8 * 86400", "UPDATE invitations SET expires_at = now() - interval '8 days'").await;
        sql(db, "UPDATE mail_outbox SET created_at = unixepoch('subsec') - 31 * 86400", "UPDATE mail_outbox SET created_at = now() - interval '31 days'").await;
        sql(db, "UPDATE rate_limit_hits SET at = unixepoch('subsec') - 2 * 86400", "UPDATE rate_limit_hits SET at = now() - interval '2 days'").await;
        sql(db, "UPDATE shares SET purged_at = unixepoch('subsec') - 31 * 86400", "UPDATE shares SET purged_at = now() - interval '31 days'").await;
        let response = post_trigger(&app, Some(TOKEN), Some(&share.token)).await;
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        let done = finished_run(&app, &location).await;
        assert_eq!(done["run"]["state"], "succeeded", "{done}");
        let kinds: HashSet<_> = done["items"].as_array().unwrap().iter().map(|i| i["target_kind"].as_str().unwrap().to_owned()).collect();
        for kind in ["session", "code", "invitation", "mail", "rate_limit_hit", "share_personal_data"] {
            assert!(kinds.contains(kind), "the run swept {kind}: {kinds:?}");
        }

        let ledger = dump(db, &["maintenance_runs", "maintenance_items", "maintenance_leases"]).await;
        assert!(ledger.len() > 100, "the dump has the ledger's contents");
        let token_hash = watasu::secret::sha256_hex(&share.token);
        for secret in [
            sender_email, recipient, &recipient.to_lowercase(), "invited.private", "mailbox.private", "private",
            file_name, "給与明細", &share.token, &token_hash, invitation.expose(), "@",
        ] {
            assert!(!ledger.to_lowercase().contains(&secret.to_lowercase()), "the ledger holds {secret:?}");
        }
    }

    async fn the_timer_and_page_views_run_and_record_their_passes(backend: Backend) {
        let app = TestApp::spawn_with(backend, |s| {
            s.gc_interval = Duration::from_secs(1);
            s.maintenance_interval = Duration::from_secs(1);
        })
        .await;
        let expired = insert_sessions(app.db(), 3, SessionAge::Expired).await;
        let share = app.create_share().await;
        app.expire_share(share.id).await;
        // A page view asks for a GC pass after its response.
        assert_eq!(app.browser().get("/").await.status, 200);
        let recorded = |trigger: &'static str, kind: &'static str, target: i64| {
            let db = app.db().clone();
            async move {
                let sql = "SELECT count(*) FROM maintenance_items i JOIN maintenance_runs r ON r.id = i.run_id
                            WHERE r.trigger = $1 AND r.kind = $2 AND i.target_id = $3 AND i.outcome = 'deleted'";
                let n: i64 = match &db {
                    Db::Sqlite(pool) => sqlx::query_scalar(sql).bind(trigger).bind(kind).bind(target).fetch_one(pool).await.unwrap(),
                    Db::Postgres(pool) => sqlx::query_scalar(sql).bind(trigger).bind(kind).bind(target).fetch_one(pool).await.unwrap(),
                };
                n == 1
            }
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let mut done = recorded("request", "share_gc", share.id).await || recorded("timer", "share_gc", share.id).await;
            for id in &expired {
                done = done && recorded("timer", "all", *id).await && !session_exists(app.db(), *id).await;
            }
            if done {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the timer's sweep and the GC pass were not recorded");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn the_admin_page_lists_runs_failures_first(backend: Backend) {
        let app = quiet_app(backend).await;
        insert_sessions(app.db(), 2, SessionAge::Expired).await;
        let m = &app.state.maintenance;
        let ok = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
        let (broken, _) = m.ledger().accept(Kind::Codes, Trigger::Cli, "broken").await.unwrap();
        m.ledger().start(broken.id).await.unwrap();
        m.ledger().abandon(broken.id).await.unwrap();
        let later = m.run_now(Kind::Invitations, Trigger::Cli).await.unwrap();

        let admin_email = "admin@example.test";
        let hash = watasu::accounts::password::hash_password(watasu::secret::SecretString::new(PASSWORD)).await.unwrap();
        watasu::accounts::Users::new(app.db().clone())
            .create(&watasu::accounts::EmailAddress::parse(admin_email).unwrap(), "Admin", &hash, watasu::accounts::Role::Admin)
            .await
            .unwrap();
        let admin = signed_in(&app, admin_email).await;
        let page = admin.get("/admin/maintenance").await;
        assert_eq!(page.status, 200, "{}", page.body);
        let states: Vec<_> = page.html().select(&scraper::Selector::parse("tr.run").unwrap()).map(|r| (r.value().attr("data-run").unwrap().parse::<i64>().unwrap(), r.value().attr("data-state").unwrap().to_owned())).collect();
        assert_eq!(states[0], (broken.id, "failed".to_owned()), "{states:?}");
        let later_at = states.iter().position(|(id, _)| *id == later.id).unwrap();
        let ok_at = states.iter().position(|(id, _)| *id == ok.id).unwrap();
        assert!(later_at < ok_at, "newest first after the failures: {states:?}");

        let one = admin.get(&format!("/admin/maintenance/{}", ok.id)).await;
        assert_eq!(one.status, 200);
        assert_eq!(one.html().select(&scraper::Selector::parse("tr.item[data-outcome=deleted]").unwrap()).count(), 2);
        assert_eq!(admin.get("/admin/maintenance/nope").await.status, 404);

        app.create_sender_with_password("sender@example.test", "Sender", PASSWORD).await;
        let sender = signed_in(&app, "sender@example.test").await;
        assert_eq!(sender.get("/admin/maintenance").await.status, 404);
        assert_eq!(sender.get(&format!("/admin/maintenance/{}", ok.id)).await.status, 404);
    }
}

async fn signed_in(app: &TestApp, email: &str) -> Browser {
    app.sign_in(email, PASSWORD).await
}

/// Every row of `tables` as text (all columns), for grepping.
async fn dump(db: &Db, tables: &[&str]) -> String {
    let mut out = String::new();
    for table in tables {
        match db {
            Db::Sqlite(pool) => {
                let rows =
                    sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM {table}"))).fetch_all(pool).await.unwrap();
                for row in rows {
                    for i in 0..row.len() {
                        let text = row
                            .try_get::<Option<String>, _>(i)
                            .ok()
                            .flatten()
                            .or_else(|| row.try_get::<Option<i64>, _>(i).ok().flatten().map(|v| v.to_string()))
                            .or_else(|| row.try_get::<Option<f64>, _>(i).ok().flatten().map(|v| v.to_string()));
                        out.push_str(&text.unwrap_or_default());
                        out.push('|');
                    }
                    out.push('\n');
                }
            }
            Db::Postgres(pool) => {
                let rows: Vec<String> =
                    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT row_to_json(t)::text FROM {table} t")))
                        .fetch_all(pool)
                        .await
                        .unwrap();
                out.push_str(&rows.join("\n"));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_runs_the_sweeps_and_prints_the_ledger_summary() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let (code, _, stderr) = run_watasu(&["migrate", "--data-dir", data_dir], &[]);
    assert_eq!(code, 0, "{stderr}");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("watasu.db").display());
    let db = Db::connect(&url, Duration::from_secs(5)).await.unwrap();
    insert_sessions(&db, 3, SessionAge::Expired).await;
    db.close().await;

    let (code, stdout, stderr) = run_watasu(&["maintenance", "run", "--kind", "sessions", "--data-dir", data_dir], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("(sessions, cli): succeeded — deleted 3"), "{stdout}");
    assert!(stdout.contains("session") && stdout.contains("deleted") && stdout.contains(" 3"), "{stdout}");

    let (code, _, stderr) = run_watasu(&["maintenance", "run", "--kind", "users", "--data-dir", data_dir], &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("unknown kind 'users'"), "{stderr}");
}
