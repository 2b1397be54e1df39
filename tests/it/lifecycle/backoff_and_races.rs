//! The purge backoff (doubling, capped) and two collectors racing over the same shares.

use super::*;
use crate::support::Backend;

async fn the_backoff_doubles_with_each_failure(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.expired_share().await;
    f.files.place(&key);
    f.files.fail_on(&key);
    let gc = f.gc_with(NO_TIME, Duration::from_secs(60));

    let mut waits = Vec::new();
    for _ in 0..3 {
        assert_eq!(gc.collect(10, Trigger::Cli).await.unwrap(), report(0, 1, 0));
        waits.push(seconds_until_next_attempt(&f.app, id).await);
        f.app.end_purge_backoff(id).await;
    }

    assert_eq!(purge_attempts(&f.app, id).await, 3);
    for (wait, expected) in waits.iter().zip([60.0, 120.0, 240.0]) {
        assert!((wait - expected).abs() <= 5.0, "backoffs {waits:?}, expected about 60, 120, 240 seconds");
    }
}

async fn the_backoff_is_capped_at_64_times_the_base(backend: Backend) {
    let f = Fixture::new(backend).await;
    let (id, key) = f.expired_share().await;
    f.files.place(&key);
    f.files.fail_on(&key);
    execute(f.app.db(), Sql::same("UPDATE shares SET purge_attempts = 10 WHERE id = $1"), id).await;

    let done = f.gc_with(NO_TIME, Duration::from_secs(60)).collect(10, Trigger::Cli).await.unwrap();

    assert_eq!(done, report(0, 1, 0));
    assert_eq!(purge_attempts(&f.app, id).await, 11);
    let wait = seconds_until_next_attempt(&f.app, id).await;
    assert!((wait - 60.0 * 64.0).abs() <= 5.0, "backs off {wait}s, expected about 3840s");
}

async fn two_collectors_racing_purge_every_share_exactly_once(backend: Backend) {
    let app = quiet_app(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let (active, active_path) = local_share(&app, sender).await;
    let mut collectable = Vec::new();
    for _ in 0..200 {
        collectable.push(local_share(&app, sender).await);
    }
    let expired = app.set_ago("shares", &["expires_at"], 1, &format!("id <> {}", active)).await;
    assert_eq!(expired, 200);
    let start = Arc::new(tokio::sync::Barrier::new(2));
    let one = local_gc(&app, NO_TIME, Duration::from_secs(60));
    let two = local_gc(&app, NO_TIME, Duration::from_secs(60));

    let (one, two) = tokio::join!(tokio::spawn(drain(one, start.clone())), tokio::spawn(drain(two, start.clone())));
    let (one, two) = (one.unwrap(), two.unwrap());

    println!("[{backend:?}] runner one {one:?}, runner two {two:?}");
    assert_eq!(one.purged + two.purged, 200, "one {one:?}, two {two:?}");
    assert_eq!(one.failed + two.failed, 0, "one {one:?}, two {two:?}");
    for (id, path) in &collectable {
        assert!(!path.exists(), "share {id}'s file is still on disk");
    }
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE status = 'purged' AND id <> $1", active).await, 200);
    assert_eq!(
        count(
            app.db(),
            "SELECT count(*) FROM shares s WHERE s.id <> $1
                    AND (SELECT count(*) FROM share_events e WHERE e.share_id = s.id AND e.kind = 'purged') <> 1",
            active,
        )
        .await,
        0,
        "every share must have exactly one purged event"
    );
    assert_eq!(
        count(app.db(), "SELECT count(*) FROM share_events WHERE kind = 'purged' AND share_id > $1", 0).await,
        200
    );
    assert_eq!(status(&app, active).await, "active");
    assert_eq!(purged_events(&app, active).await, 0);
    assert!(active_path.is_file(), "the active share's file must stay");
}

both_backends!(
    the_backoff_doubles_with_each_failure,
    the_backoff_is_capped_at_64_times_the_base,
    two_collectors_racing_purge_every_share_exactly_once
);
