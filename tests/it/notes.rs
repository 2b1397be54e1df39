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
    support::{Backend, TestApp, count, shares::note_seal},
};

const NOTE: &str = "金庫の暗証番号: 4711-0815 ";

async fn sealed(app: &TestApp, handover_id: i64) -> Option<Vec<u8>> {
    const SQL: &str = "SELECT note_sealed FROM handovers WHERE id = $1";
    on_db!(app.db(), |pool| sqlx::query_scalar(SQL).bind(handover_id).fetch_one(pool).await.unwrap())
}

async fn a_note_is_sealed_at_rest_and_destroyed_when_the_last_share_is_done(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.access_time_gc = false).await;
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

both_backends!(
    a_note_is_sealed_at_rest_and_destroyed_when_the_last_share_is_done,
    a_handover_carries_files_or_a_note_never_both,
);
