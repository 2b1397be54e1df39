//! The sweeps: a cutoff fixed once per run, re-checks at delete time, batch caps, item outcomes, retention.

use super::*;
use crate::support::Backend;
use watasu::{
    db::{Dialect, Sql},
    on_db, sql,
};

async fn a_session_renewed_between_scan_and_delete_survives(backend: Backend) {
    let app = quiet_app(backend).await;
    let db = app.db();
    let ids = insert_sessions(db, 3, SessionAge::Expired).await;
    let m = &app.state.services.maintenance;
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
    let m = &app.state.services.maintenance;
    let (run, _) = m.ledger().accept(Kind::Sessions, Trigger::Cli, "cutoff").await.unwrap();
    let started = m.ledger().start(run.id).await.unwrap().unwrap().cutoff.unwrap();
    // Time moves through the database: the run started 8 s ago (its cutoff with it), and the
    // "soon" sessions expired 4 s ago, after that cutoff but before the clock's now.
    move_cutoff_back(db, run.id, 8).await;
    let cutoff = m.ledger().get(run.id).await.unwrap().unwrap().cutoff.unwrap();
    assert!(cutoff < started);
    for id in &expiring_soon {
        clock::set_ago(db, "sessions", &["expires_at"], 4, &clock::id(*id)).await;
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
    assert_eq!((next.state.code(), next.deleted), ("succeeded", 4));
    assert!(next.cutoff.unwrap() > cutoff);
}

async fn a_run_stops_at_its_batch_cap_and_the_next_run_finishes(backend: Backend) {
    let app = quiet_app(backend).await;
    insert_sessions(app.db(), 10, SessionAge::Expired).await;
    let m = app.state.services.maintenance.clone().with_budget(small_budget(3, 2));
    let capped = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
    assert_eq!((capped.state.code(), capped.deleted, capped.batches), ("partial", 6, 2));
    assert!(capped.note.as_deref().unwrap().contains("batch cap"), "{:?}", capped.note);

    let rest = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
    assert_eq!((rest.state.code(), rest.deleted), ("succeeded", 4));

    let no_time =
        app.state.services.maintenance.clone().with_budget(Budget { max_time: Duration::ZERO, ..small_budget(3, 9) });
    insert_sessions(app.db(), 1, SessionAge::Expired).await;
    let timed_out = no_time.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
    assert_eq!((timed_out.state.code(), timed_out.deleted), ("partial", 0));
    assert!(timed_out.note.as_deref().unwrap().contains("time cap"));
}

async fn items_record_every_outcome(backend: Backend) {
    let app = quiet_app(backend).await;
    let db = app.db();
    let ids = insert_sessions(db, 3, SessionAge::Expired).await;
    let m = &app.state.services.maintenance;
    let (run, _) = m.ledger().accept(Kind::Sessions, Trigger::Cli, "outcomes").await.unwrap();
    let cutoff = m.ledger().start(run.id).await.unwrap().unwrap().cutoff.unwrap();
    let sweep = m.sweep(Kind::Sessions);
    let mut walk = sweep.start(db.clone(), run.id, cutoff);
    let scanned = walk.scan(10).await.unwrap();
    renew_session(db, ids[0]).await;
    execute(db, Sql::same("DELETE FROM sessions WHERE id = $1"), ids[1]).await;
    walk.apply(&scanned).await.unwrap();
    assert_eq!(item_outcome(db, run.id, ids[0]).await, "skipped");
    assert_eq!(item_outcome(db, run.id, ids[1]).await, "already_gone");
    assert_eq!(item_outcome(db, run.id, ids[2]).await, "deleted");

    // A file that cannot be deleted: the GC's item says failed, with a reason that names no path.
    let share = app.create_share().await;
    app.expire_share(share.id).await;
    let key: String = on_db!(db, |pool| {
        sqlx::query_scalar(
            "SELECT f.storage_key FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1",
        )
        .bind(share.id)
        .fetch_one(pool)
        .await
        .unwrap()
    });
    let path = app.data_dir.path().join("files").join(&key);
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("inside"), b"x").unwrap();
    let repo = LifecycleRepository::new(db.clone(), Duration::ZERO, Duration::from_secs(3600));
    let gc = ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(db.clone()));
    assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().failed, 1);
    let gc_run = count(db, "SELECT max(id) FROM maintenance_runs WHERE kind = 'share_gc' AND id > $1", 0).await;
    assert_eq!(item_outcome(db, gc_run, share.id).await, "failed");
    let reason: String = watasu::on_db!(db, |pool| {
        sqlx::query_scalar("SELECT reason FROM maintenance_items WHERE run_id = $1")
            .bind(gc_run)
            .fetch_one(pool)
            .await
            .unwrap()
    });
    assert!(!reason.is_empty() && !reason.contains(&key) && !reason.contains('/'), "{reason}");
    let gc_state = m.ledger().get(gc_run).await.unwrap().unwrap().state;
    assert_eq!(gc_state.code(), "partial");

    // The GC heals once the file can go; its run records the share as deleted.
    std::fs::remove_dir_all(&path).unwrap();
    execute(db, Sql::same("UPDATE shares SET next_purge_attempt_at = NULL WHERE id = $1"), share.id).await;
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
    let share = app.fake_share().sender(sender).recipient("someone@example.test").file("a.txt", b"a").create().await;
    for (mac, offset) in [("old", -7200.0), ("recent", -60.0), ("live", 600.0)] {
        const CHALLENGE: Sql = sql!(
            "INSERT INTO otp_challenges (share_id, session_id, code_mac, expires_at) VALUES ($1, $2, $3, "
            now " + " secs("$4") ")"
        );
        on_db!(db, |pool| sqlx::query(pool.sql(&CHALLENGE))
            .bind(share.id)
            .bind(live[0])
            .bind(mac)
            .bind(offset)
            .execute(pool)
            .await
            .unwrap()
            .rows_affected());
    }
    // Invitations: used 8 days ago, expired 8 days ago, expired yesterday, pending.
    for (email, used, expires) in [
        ("used@x.test", Some(-8.0), 1.0),
        ("old@x.test", None, -8.0),
        ("recent@x.test", None, -1.0),
        ("open@x.test", None, 2.0),
    ] {
        let days = 24.0 * 3600.0;
        const INVITATION: Sql = sql!(
            "INSERT INTO invitations (token_hash, email, expires_at, used_at) VALUES ($1, $1, "
            now " + " secs("$2") ", " now " + " secs("$3") ")"
        );
        on_db!(db, |pool| sqlx::query(pool.sql(&INVITATION))
            .bind(email)
            .bind(expires * days)
            .bind(used.map(|u| u * days))
            .execute(pool)
            .await
            .unwrap()
            .rows_affected());
    }
    // Mails: sent 31 days ago, dead 31 days ago, pending 31 days ago, sent yesterday.
    for (status, age_days) in [("sent", 31.0), ("dead", 31.0), ("pending", 31.0), ("sent", 1.0)] {
        let age = age_days * 24.0 * 3600.0;
        let sent_at = (status == "sent").then_some(age);
        // The message is bytes: an empty one for a sent mail, one byte otherwise.
        const MAIL: Sql = sql!(
            "INSERT INTO mail_outbox (kind, recipient, message, status, created_at, sent_at) \
             VALUES ('share_notification', $1, CASE WHEN $1 = 'sent' THEN "
            { sqlite: "X'' ELSE X'41'", postgres: "''::bytea ELSE 'A'::bytea" }
            " END, $1, " now " - " secs("$2") ", " now " - " secs("$3") ")"
        );
        on_db!(db, |pool| sqlx::query(pool.sql(&MAIL))
            .bind(status)
            .bind(age)
            .bind(sent_at)
            .execute(pool)
            .await
            .unwrap()
            .rows_affected());
    }
    // Rate-limit hits: two days old, and fresh.
    run_sql(db, sql!("INSERT INTO rate_limit_hits (bucket, at) VALUES ('old', " now " - " secs("172800") "), ('fresh', " now ")")).await;

    let run = app.state.services.maintenance.run_now(Kind::All, Trigger::Cli).await.unwrap();
    assert_eq!(run.state.code(), "succeeded", "{:?}", run.note);

    for id in expired.iter().chain(&idle) {
        assert!(!session_exists(db, *id).await, "expired or idle session {id} is deleted");
    }
    for id in &live {
        assert!(session_exists(db, *id).await, "live session {id} stays");
    }
    let text_set = |sql: &'static str| async move {
        let values: Vec<String> = on_db!(db, |pool| sqlx::query_scalar(sql).fetch_all(pool).await.unwrap());
        values.into_iter().collect::<HashSet<_>>()
    };
    assert_eq!(text_set("SELECT code_mac FROM otp_challenges").await, HashSet::from(["recent".into(), "live".into()]));
    assert_eq!(
        text_set("SELECT email FROM invitations").await,
        HashSet::from(["recent@x.test".into(), "open@x.test".into()])
    );
    let mails =
        text_set("SELECT recipient || ':' || CAST(CAST(sent_at IS NULL AS INTEGER) AS TEXT) FROM mail_outbox").await;
    assert_eq!(mails, HashSet::from(["pending:1".into(), "sent:0".into()]), "old sent and dead mails go");
    assert_eq!(
        text_set("SELECT bucket FROM rate_limit_hits WHERE bucket IN ('old', 'fresh')").await,
        HashSet::from(["fresh".into()])
    );
    let summary = app.state.services.maintenance.ledger().summary(run.id).await.unwrap();
    let kinds: HashSet<_> = summary.iter().map(|s| s.target_kind.code()).collect();
    assert_eq!(kinds, HashSet::from(["session", "code", "invitation", "mail", "rate_limit_hit"]));
}

async fn the_retention_sweep_scrubs_old_purged_shares_and_leaves_recent_ones(backend: Backend) {
    let app = quiet_app(backend).await;
    let db = app.db();
    let sender = app.create_sender_with_password("keeper@example.test", "Keeper", PASSWORD).await;
    let mut shares = Vec::new();
    for name in ["old-purged.pdf", "recent-purged.pdf", "old-active.pdf"] {
        let share =
            app.fake_share().sender(sender).recipient("friend@example.test").file(name, b"bytes").create().await;
        shares.push(share.id);
    }
    let [old, recent, active] = [shares[0], shares[1], shares[2]];
    for id in [old, recent] {
        app.expire_share(id).await;
    }
    let repo = LifecycleRepository::new(db.clone(), Duration::ZERO, Duration::from_secs(3600));
    let gc = ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(db.clone()));
    assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().purged, 2);
    execute(db, sql!("UPDATE shares SET purged_at = " now " - " secs("31 * 86400") ", created_at = " now " - " secs("40 * 86400") " WHERE id = $1"), old).await;
    clock::set_ago(db, "shares", &["created_at"], 40 * 86400, &clock::id(active)).await;

    let run = app.state.services.maintenance.run_now(Kind::ShareRetention, Trigger::Cli).await.unwrap();
    assert_eq!((run.state.code(), run.deleted), ("succeeded", 1));

    let personal = |id: i64| async move {
        let sql = "SELECT s.recipient_email || '|' || s.message || '|' || f.original_name FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1";
        let value: String = on_db!(db, |pool| sqlx::query_scalar(sql).bind(id).fetch_one(pool).await.unwrap());
        value
    };
    assert_eq!(personal(old).await, "||", "recipient, message and file name are gone");
    assert_eq!(personal(recent).await, "friend@example.test|Here is the file.|recent-purged.pdf");
    assert_eq!(personal(active).await, "friend@example.test|Here is the file.|old-active.pdf");
    // What the statistics need stays.
    assert_eq!(count(db, "SELECT count(*) FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1 AND f.size_bytes = 5 AND s.status = 'purged'", old).await, 1);
    assert_eq!(item_outcome(db, run.id, old).await, "deleted");
    // The sender's page says what happened instead of showing blanks.
    let page = app.sign_in("keeper@example.test", PASSWORD).await.get(&format!("/shares/{old}")).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("保存期間を過ぎたため消去") && !page.body.contains("old-purged.pdf"), "{}", page.body);
    // Scrubbed shares are not looked at again.
    let again = app.state.services.maintenance.run_now(Kind::ShareRetention, Trigger::Cli).await.unwrap();
    assert_eq!(again.deleted + again.skipped + again.already_gone, 0);
}

both_backends!(
    a_session_renewed_between_scan_and_delete_survives,
    the_cutoff_is_fixed_when_the_run_starts,
    a_run_stops_at_its_batch_cap_and_the_next_run_finishes,
    items_record_every_outcome,
    each_sweep_removes_only_what_has_expired,
    the_retention_sweep_scrubs_old_purged_shares_and_leaves_recent_ones
);
