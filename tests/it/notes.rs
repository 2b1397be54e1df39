//! Secret notes: sealed at rest under the instance key with the handover bound in, handed over to
//! each recipient like a file, and destroyed (not hidden) once the last share that needs the note
//! is done.

use std::time::Duration;

use watasu::{
    lifecycle::{LifecycleRepository, ShareGc},
    maintenance::Trigger,
    on_db,
    share::{ShareEvents, create::CreateError},
};

use crate::{
    both_backends,
    support::{Backend, RECIPIENT, TestApp, count, recipient::event_kinds, shares::note_seal},
};

const NOTE: &str = "金庫の暗証番号: 4711-0815 ";

async fn sealed(app: &TestApp, handover_id: i64) -> Option<Vec<u8>> {
    const SQL: &str = "SELECT note_sealed FROM handovers WHERE id = $1";
    on_db!(app.db(), |pool| sqlx::query_scalar(SQL).bind(handover_id).fetch_one(pool).await.unwrap())
}

async fn a_note_is_sealed_at_rest_and_destroyed_when_the_last_share_is_done(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |s| s.access_time_gc = false).await;
    let shares =
        app.fake_share().note(NOTE).recipient("one@example.test").recipient("two@example.test").create_all().await;
    let handover = count(app.db(), "SELECT handover_id FROM shares WHERE id = $1", shares[0].id).await;
    assert_eq!(count(app.db(), "SELECT count(*) FROM files WHERE handover_id = $1", handover).await, 0);
    let stored = sealed(&app, handover).await.expect("the note is stored");
    assert!(!stored.windows(4).any(|w| w == b"4711"), "the note is stored in the clear");
    assert_eq!(note_seal().open(handover, &stored).unwrap().expose(), NOTE);
    assert!(note_seal().open(handover + 1, &stored).is_none(), "a note moved to another handover opened");
    let kept = app.state.shares.links.repo().sealed_note(shares[0].id).await.unwrap();
    assert_eq!(kept, Some((handover, stored.clone())));

    let repo = LifecycleRepository::new(app.db().clone(), Duration::ZERO, Duration::from_secs(60));
    let gc = ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(app.db().clone()));
    app.expire_share(shares[0].id).await;
    assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().purged, 1);
    assert_eq!(sealed(&app, handover).await, Some(stored), "the second recipient still needs the note");

    app.expire_share(shares[1].id).await;
    assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().purged, 1);
    assert_eq!(sealed(&app, handover).await, None, "the note outlived its last share");
    assert_eq!(count(app.db(), "SELECT count(*) FROM handovers WHERE id = $1 AND has_note", handover).await, 1);
}

async fn a_handover_carries_files_or_a_note_never_both(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let both = app.fake_share().sender(sender).note(NOTE).file("a.txt", b"a");
    let refused =
        watasu::share::create::create_handover(&app.state.shares.links, app.state.store.as_ref(), both.request(sender))
            .await;
    assert!(matches!(refused, Err(CreateError::NoteWithFiles)), "{refused:?}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM handovers WHERE sender_id = $1", sender).await, 0);
}

async fn a_note_is_shown_to_the_claiming_browser_only_and_is_gone_after_the_grace(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.access_time_gc = false).await;
    let shares = app.fake_share().note(NOTE).recipient(RECIPIENT).recipient("two@example.test").create_all().await;
    let (one, two) = (&shares[0], &shares[1]);
    let note_path = format!("/s/{}/note", one.token);

    // Before the code: who sent a note, never the note.
    let landing = app.browser().open_link(&one.token).await;
    assert!(landing.body.contains("秘密のメモが届いています"), "{}", landing.body);
    assert!(!landing.body.contains("4711"));
    // After it: a button, still not the note; a GET never claims.
    let (browser, csrf) = app.verified_browser(one).await;
    let step = browser.open_link(&one.token).await;
    assert!(step.body.contains("メモを表示する") && !step.body.contains("4711"), "{}", step.body);
    assert_eq!(browser.get(&note_path).await.header("location"), Some(format!("/s/{}", one.token).as_str()));
    assert_eq!(browser.claim(&one.token, &csrf).await.status(), 404, "a note is no file to download");
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE id = $1 AND status = 'active'", one.id).await, 1);

    let claimed = browser.post_form(&note_path, &[("csrf_token", &csrf)]).await;
    assert_eq!(claimed.status, 303);
    assert_eq!(claimed.header("location"), Some(note_path.as_str()));
    let shown = browser.get(&note_path).await;
    assert_eq!(shown.status, 200);
    assert!(shown.body.contains(NOTE), "{}", shown.body);
    assert_eq!(shown.header("cache-control"), Some("no-store"));
    assert!(event_kinds(&app, one.id).await.ends_with(&["downloaded".to_owned(), "download_completed".to_owned()]));
    // Back at the link during the grace: this browser was shown the note and may see it again.
    let again = format!("href=\"{note_path}\"");
    let back = browser.open_link(&one.token).await;
    assert_eq!(back.status, 410);
    assert!(back.body.contains("このメモは") && back.body.contains(&again), "{}", back.body);

    // Nobody else: another browser, even one the code let in before the claim.
    let stranger = app.browser();
    assert_eq!(stranger.get(&note_path).await.status, 410);
    assert!(!stranger.open_link(&one.token).await.body.contains(&again), "a stranger was offered the note");
    // The other recipient has a claim of their own.
    let other = app.browser();
    let other_csrf = app.verify_as(&other, two, "two@example.test").await.csrf_token();
    let other_path = format!("/s/{}/note", two.token);
    assert_eq!(other.post_form(&other_path, &[("csrf_token", &other_csrf)]).await.status, 303);
    assert!(other.get(&other_path).await.body.contains(NOTE));

    // Past the grace the GC destroys it, and the claiming browser is told it was delivered.
    app.consumed_ago(one.id, 16 * 60).await;
    app.consumed_ago(two.id, 16 * 60).await;
    let handover = count(app.db(), "SELECT handover_id FROM shares WHERE id = $1", one.id).await;
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert_eq!(sealed(&app, handover).await, None);
    assert_eq!(browser.get(&note_path).await.status, 410);
    let gone = browser.open_link(&one.token).await;
    assert!(gone.body.contains("消去され") && !gone.body.contains(&again), "{}", gone.body);
}

both_backends!(
    a_note_is_shown_to_the_claiming_browser_only_and_is_gone_after_the_grace,
    a_note_is_sealed_at_rest_and_destroyed_when_the_last_share_is_done,
    a_handover_carries_files_or_a_note_never_both,
);
