//! Secret notes: sealed at rest under a key of their own with the handover bound in, handed over to
//! each recipient like a file, and destroyed (not hidden) once the last share that needs the note
//! is done.

use std::time::Duration;

use watasu::{
    db::{Db, Timestamp},
    i18n::{Lang, format},
    lifecycle::{LifecycleRepository, ShareGc},
    maintenance::Trigger,
    on_db,
    share::{ShareEvents, create::CreateError, note::SealedNote},
};

use crate::{
    both_backends,
    support::{Backend, RECIPIENT, TestApp, count, recipient::event_kinds, shares::note_seal},
};

const NOTE: &str = "金庫の暗証番号: 4711-0815 ";

/// The handover's note as its row keeps it: the ciphertext and the note's own wrapped key.
async fn stored_note(app: &TestApp, handover_id: i64) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    const SQL: &str = "SELECT note_sealed, note_key FROM handovers WHERE id = $1";
    on_db!(app.db(), |pool| sqlx::query_as(SQL).bind(handover_id).fetch_one(pool).await.unwrap())
}

async fn sealed(app: &TestApp, handover_id: i64) -> Option<Vec<u8>> {
    stored_note(app, handover_id).await.0
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

async fn a_note_is_sealed_at_rest_under_its_own_key_and_destroyed_with_it_when_the_last_share_is_done(
    backend: Backend,
) {
    let app = TestApp::spawn_settled(backend, |s| s.access_time_gc = false).await;
    let shares =
        app.fake_share().note(NOTE).recipient("one@example.test").recipient("two@example.test").create_all().await;
    let handover = count(app.db(), "SELECT handover_id FROM shares WHERE id = $1", shares[0].id).await;
    assert_eq!(count(app.db(), "SELECT count(*) FROM files WHERE handover_id = $1", handover).await, 0);
    let (Some(stored), Some(wrapped_key)) = stored_note(&app, handover).await else { panic!("the note is stored") };
    assert!(!contains(&stored, b"4711"), "the note is stored in the clear");
    let kept = app.state.shares.links.repo().sealed_note(shares[0].id).await.unwrap().expect("the note is there");
    assert_eq!((kept.handover_id, &kept.sealed, kept.wrapped_key.as_ref()), (handover, &stored, Some(&wrapped_key)));
    assert_eq!(note_seal().open(&kept).unwrap().expose(), NOTE);
    let moved = SealedNote { handover_id: handover + 1, ..kept.clone() };
    assert!(note_seal().open(&moved).is_none(), "a note moved to another handover opened");

    let repo = LifecycleRepository::new(app.db().clone(), Duration::ZERO, Duration::from_secs(60));
    let gc = ShareGc::new(repo, app.state.store.clone(), ShareEvents::new(app.db().clone()));
    app.expire_share(shares[0].id).await;
    assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().purged, 1);
    assert_eq!(sealed(&app, handover).await, Some(stored), "the second recipient still needs the note");

    app.expire_share(shares[1].id).await;
    assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap().purged, 1);
    assert_eq!(stored_note(&app, handover).await, (None, None), "the note or its key outlived its last share");
    assert_eq!(count(app.db(), "SELECT count(*) FROM handovers WHERE id = $1 AND has_note", handover).await, 1);
    // A copy of the row taken before, with the instance key, opens nothing without the note's key.
    assert!(note_seal().open(&SealedNote { wrapped_key: None, ..kept }).is_none());
}

/// After a note ends, a copy of the database holds neither its ciphertext nor its key: not in the
/// rows (what `pg_dump` or `.backup` copies) and, on SQLite, not in the file's freed pages either.
async fn a_backup_taken_after_a_note_ended_opens_nothing(backend: Backend) {
    let app = TestApp::spawn_settled(backend, |s| s.access_time_gc = false).await;
    let share = app.fake_share().note(NOTE).create().await;
    let handover = count(app.db(), "SELECT handover_id FROM shares WHERE id = $1", share.id).await;
    let (Some(stored), Some(wrapped_key)) = stored_note(&app, handover).await else { panic!("the note is stored") };
    app.expire_share(share.id).await;
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert_eq!(stored_note(&app, handover).await, (None, None));
    if let Db::Sqlite(pool) = app.db() {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(pool).await.unwrap();
        let file = std::fs::read(app.data_dir.path().join("watasu.db")).unwrap();
        for (what, bytes) in [("ciphertext", &stored), ("wrapped key", &wrapped_key)] {
            assert!(!contains(&file, &bytes[12..40]), "the note's {what} is still in the database file");
        }
    }
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
    // The page says until when this browser can show it again: the grace from its first showing.
    let started: Timestamp = on_db!(app.db(), |pool| {
        sqlx::query_scalar("SELECT delivery_started_at FROM shares WHERE id = $1")
            .bind(one.id)
            .fetch_one(pool)
            .await
            .unwrap()
    });
    let grace = chrono::Duration::from_std(app.state.config.settings.delivery_grace).unwrap();
    let until = format::clock_time(Timestamp(started.0 + grace), Lang::Ja);
    assert!(shown.body.contains(&until), "{until} not in {}", shown.body);
    assert!(event_kinds(&app, one.id).await.ends_with(&["downloaded".to_owned(), "download_completed".to_owned()]));
    // Back at the link during the grace: this browser was shown the note and may see it again.
    let again = format!("href=\"{note_path}\"");
    let back = browser.open_link(&one.token).await;
    assert_eq!(back.status, 410);
    assert!(back.body.contains("このメモは") && back.body.contains(&again), "{}", back.body);
    assert!(back.body.contains(&until), "{until} not in {}", back.body);

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
    a_note_is_sealed_at_rest_under_its_own_key_and_destroyed_with_it_when_the_last_share_is_done,
    a_backup_taken_after_a_note_ended_opens_nothing,
    a_handover_carries_files_or_a_note_never_both,
);
