//! The run ledger as people see it: no address, token or file name in it, the timer's and page views' passes, the admin page, the CLI summary.

use super::*;
use crate::support::Backend;
use watasu::on_db;

async fn the_ledger_never_holds_an_address_a_token_or_a_file_name(backend: Backend) {
    let app = quiet_app(backend).await;
    let db = app.db();
    let sender_email = "sender.private@example.test";
    let recipient = "Recipient.Private@Example.test";
    let file_name = "給与明細-secret-report.pdf";
    let sender = app.create_sender(sender_email, "Private Sender").await;
    let share = app.fake_share().sender(sender).recipient(recipient).file(file_name, b"private bytes").create().await;
    // The recipient asks for a code: a session, a code, rate-limit hits and a mail.
    let browser = Browser::new(&app.base);
    let landing = browser.get(&format!("/s/{}", share.token)).await;
    let asked = browser
        .post_form(&format!("/s/{}/email", share.token), &[("csrf_token", &landing.csrf_token()), ("email", recipient)])
        .await;
    assert_eq!(asked.status, 303);
    app.smtp.wait_for(1, Duration::from_secs(10)).await;
    let (_, invitation) = watasu::accounts::invitations::Invitations::new(db.clone())
        .create(
            &watasu::accounts::EmailAddress::parse("invited.private@example.test").unwrap(),
            watasu::accounts::Role::Sender,
            sender,
            watasu::i18n::Lang::Ja,
        )
        .await
        .unwrap();
    run_sql(db, sql!(
        "INSERT INTO mail_outbox (kind, recipient, message, status, sent_at) VALUES ('share_notification', 'mailbox.private@example.test', "
        { sqlite: "X''", postgres: "''::bytea" } ", 'sent', " now ")"
    )).await;
    // Everything ages past its keep time, the share is collected, then everything is swept.
    app.expire_share(share.id).await;
    let repo = LifecycleRepository::new(db.clone(), Duration::ZERO, Duration::from_secs(3600));
    ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(db.clone())).collect(10, Trigger::Cli).await.unwrap();
    run_sql(db, sql!("UPDATE sessions SET expires_at = " now " - " secs("1"))).await;
    run_sql(db, sql!("UPDATE otp_challenges SET expires_at = " now " - " secs("7200"))).await;
    run_sql(db, sql!("UPDATE invitations SET expires_at = " now " - " secs("8 * 86400"))).await;
    run_sql(db, sql!("UPDATE mail_outbox SET created_at = " now " - " secs("31 * 86400"))).await;
    run_sql(db, sql!("UPDATE rate_limit_hits SET at = " now " - " secs("2 * 86400"))).await;
    run_sql(db, sql!("UPDATE shares SET purged_at = " now " - " secs("31 * 86400"))).await;
    let response = post_trigger(&app, Some(TOKEN), Some(&share.token)).await;
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let done = finished_run(&app, &location).await;
    assert_eq!(done["run"]["state"], "succeeded", "{done}");
    let kinds: HashSet<_> =
        done["items"].as_array().unwrap().iter().map(|i| i["target_kind"].as_str().unwrap().to_owned()).collect();
    for kind in ["session", "code", "invitation", "mail", "rate_limit_hit", "share_personal_data"] {
        assert!(kinds.contains(kind), "the run swept {kind}: {kinds:?}");
    }

    let ledger = dump(db, &["maintenance_runs", "maintenance_items", "maintenance_leases"]).await;
    assert!(ledger.len() > 100, "the dump has the ledger's contents");
    let token_hash = watasu::secret::sha256_hex(&share.token);
    for secret in [
        sender_email,
        recipient,
        &recipient.to_lowercase(),
        "invited.private",
        "mailbox.private",
        "private",
        file_name,
        "給与明細",
        &share.token,
        &token_hash,
        invitation.expose(),
        "@",
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
            let n: i64 = on_db!(&db, |pool| {
                sqlx::query_scalar(sql).bind(trigger).bind(kind).bind(target).fetch_one(pool).await.unwrap()
            });
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
    let m = &app.state.services.maintenance;
    let ok = m.run_now(Kind::Sessions, Trigger::Cli).await.unwrap();
    let (broken, _) = m.ledger().accept(Kind::Codes, Trigger::Cli, "broken").await.unwrap();
    m.ledger().start(broken.id).await.unwrap();
    m.ledger().abandon(broken.id).await.unwrap();
    let later = m.run_now(Kind::Invitations, Trigger::Cli).await.unwrap();

    let admin_email = "admin@example.test";
    let hash = watasu::accounts::password::hash_password(watasu::secret::SecretString::new(PASSWORD)).await.unwrap();
    watasu::accounts::Users::new(app.db().clone())
        .create(
            &watasu::accounts::EmailAddress::parse(admin_email).unwrap(),
            "Admin",
            &hash,
            watasu::accounts::Role::Admin,
            Default::default(),
        )
        .await
        .unwrap();
    let admin = app.sign_in(admin_email, PASSWORD).await;
    let page = admin.get("/admin/maintenance").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let states: Vec<_> = page
        .html()
        .select(&scraper::Selector::parse("tr.run").unwrap())
        .map(|r| {
            (
                r.value().attr("data-run").unwrap().parse::<i64>().unwrap(),
                r.value().attr("data-state").unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(states[0], (broken.id, "failed".to_owned()), "{states:?}");
    let later_at = states.iter().position(|(id, _)| *id == later.id).unwrap();
    let ok_at = states.iter().position(|(id, _)| *id == ok.id).unwrap();
    assert!(later_at < ok_at, "newest first after the failures: {states:?}");

    let one = admin.get(&format!("/admin/maintenance/{}", ok.id)).await;
    assert_eq!(one.status, 200);
    assert_eq!(one.html().select(&scraper::Selector::parse("tr.item[data-outcome=deleted]").unwrap()).count(), 2);
    assert_eq!(admin.get("/admin/maintenance/nope").await.status, 404);

    app.create_sender_with_password("sender@example.test", "Sender", PASSWORD).await;
    let sender = app.sign_in("sender@example.test", PASSWORD).await;
    assert_eq!(sender.get("/admin/maintenance").await.status, 404);
    assert_eq!(sender.get(&format!("/admin/maintenance/{}", ok.id)).await.status, 404);
}

both_backends!(
    the_ledger_never_holds_an_address_a_token_or_a_file_name,
    the_timer_and_page_views_run_and_record_their_passes,
    the_admin_page_lists_runs_failures_first
);

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
