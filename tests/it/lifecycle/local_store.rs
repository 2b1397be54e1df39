//! The GC over the real local store, with deletes that really fail on disk.

use super::*;
use crate::support::Backend;

async fn the_local_store_deletes_the_file_from_disk_and_the_share_is_purged(backend: Backend) {
    let app = quiet_app(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let (id, path) = local_share(&app, sender).await;
    assert!(app.state.lifecycle.mark_consumed(id, None).await.unwrap());
    app.state.lifecycle.record_sending(id, RangeRows::default(), FIRST_BYTE).await.unwrap();

    let done = local_gc(&app, NO_TIME, NO_TIME).collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(done, report(1, 0, 0));
    assert!(!path.exists(), "the file must be gone from disk");
    assert_eq!(status(&app, id).await, "purged");
    assert_eq!(purged_events(&app, id).await, 1);
}

async fn the_local_store_purges_a_share_whose_file_was_already_removed(backend: Backend) {
    let app = quiet_app(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let (id, path) = local_share(&app, sender).await;
    app.expire_share(id).await;
    std::fs::remove_file(&path).unwrap();

    let done = local_gc(&app, NO_TIME, NO_TIME).collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(done, report(1, 0, 0));
    assert_eq!(status(&app, id).await, "purged");
}

async fn a_delete_that_really_fails_on_disk_backs_off_and_does_not_stop_the_pass(backend: Backend) {
    let app = quiet_app(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let (consumed, consumed_path) = local_share(&app, sender).await;
    let (expired, expired_path) = local_share(&app, sender).await;
    let (healthy, healthy_path) = local_share(&app, sender).await;
    assert!(app.state.lifecycle.mark_consumed(consumed, None).await.unwrap());
    app.state.lifecycle.record_sending(consumed, RangeRows::default(), FIRST_BYTE).await.unwrap();
    app.expire_share(expired).await;
    app.expire_share(healthy).await;
    make_undeletable(&consumed_path);
    make_undeletable(&expired_path);
    let gc = local_gc(&app, NO_TIME, Duration::from_secs(60));

    let first = gc.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(first, report(1, 2, 0), "both undeletable rows fail, the later healthy one is purged");
    assert_eq!(status(&app, consumed).await, "consumed");
    assert_eq!(status(&app, expired).await, "active");
    for id in [consumed, expired] {
        assert_eq!(purge_attempts(&app, id).await, 1);
        let wait = seconds_until_next_attempt(&app, id).await;
        assert!((55.0..=65.0).contains(&wait), "share {id} backs off {wait}s, not about 60s");
        assert_eq!(purged_events(&app, id).await, 0);
    }
    assert!(consumed_path.is_dir() && expired_path.is_dir());
    assert_eq!(status(&app, healthy).await, "purged");
    assert!(!healthy_path.exists());

    assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap(), report(0, 0, 0), "backing-off rows wait");

    for (id, path) in [(consumed, &consumed_path), (expired, &expired_path)] {
        std::fs::remove_dir_all(path).unwrap();
        app.end_purge_backoff(id).await;
    }
    let healed = gc.collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(healed, report(2, 0, 0));
    assert_eq!(status(&app, consumed).await, "purged");
    assert_eq!(status(&app, expired).await, "purged");
}

both_backends!(
    the_local_store_deletes_the_file_from_disk_and_the_share_is_purged,
    the_local_store_purges_a_share_whose_file_was_already_removed,
    a_delete_that_really_fails_on_disk_backs_off_and_does_not_stop_the_pass
);
