//! A handover's files are shared by its recipients' shares: the GC deletes them when the last share
//! that needs them is done, never after the first, also with two collectors racing.

use super::*;

/// A handover of two real files for two recipients; returns both share ids and the file paths.
async fn shared_handover(app: &TestApp, sender: i64) -> ([i64; 2], [PathBuf; 2]) {
    let shares = app
        .fake_share()
        .sender(sender)
        .file("one.txt", b"one\n")
        .file("two.txt", b"two\n")
        .recipient("first@example.test")
        .recipient("second@example.test")
        .create_all()
        .await;
    let keys = crate::support::texts(
        app.db(),
        "SELECT f.storage_key FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1
          ORDER BY f.position",
        shares[0].id,
    )
    .await;
    let paths = [file_path(app, &keys[0]), file_path(app, &keys[1])];
    ([shares[0].id, shares[1].id], paths)
}

async fn files_go_with_the_last_share_that_needs_them_even_with_two_collectors_racing(backend: Backend) {
    let app = quiet_app(backend).await;
    let sender = app.create_sender("sender@example.test", "Sender Sato").await;
    let mut handovers = Vec::new();
    for _ in 0..30 {
        handovers.push(shared_handover(&app, sender).await);
    }
    // Both shares of the first 20 handovers end; of the last 10, only the first recipient's.
    let (ended, half_ended) = handovers.split_at(20);
    let ending: Vec<i64> =
        ended.iter().flat_map(|(ids, _)| *ids).chain(half_ended.iter().map(|(ids, _)| ids[0])).collect();
    let filter = format!("id IN ({})", ending.iter().map(i64::to_string).collect::<Vec<_>>().join(", "));
    assert_eq!(app.set_ago("shares", &["expires_at"], 1, &filter).await, 50);
    let start = Arc::new(tokio::sync::Barrier::new(2));
    let (one, two) =
        (local_gc(&app, NO_TIME, Duration::from_secs(60)), local_gc(&app, NO_TIME, Duration::from_secs(60)));

    let (one, two) = tokio::join!(tokio::spawn(drain(one, start.clone())), tokio::spawn(drain(two, start.clone())));
    let (one, two) = (one.unwrap(), two.unwrap());

    assert_eq!(one.purged + two.purged, 50, "one {one:?}, two {two:?}");
    assert_eq!(one.failed + two.failed, 0, "one {one:?}, two {two:?}");
    for (ids, paths) in ended {
        for path in paths {
            assert!(!path.exists(), "handover of shares {ids:?}: {} is still on disk", path.display());
        }
    }
    for (ids, paths) in half_ended {
        for path in paths {
            assert!(path.is_file(), "share {} still needs {}", ids[1], path.display());
        }
        assert_eq!(status(&app, ids[1]).await, "active");
    }
    let unmarked = "SELECT count(*) FROM files WHERE owner_id = $1 AND purged_at IS NULL";
    assert_eq!(count(app.db(), unmarked, sender).await, 20, "the ended handovers' files are marked purged");
    let purged_twice = "SELECT count(*) FROM shares s WHERE s.sender_id = $1
                          AND (SELECT count(*) FROM share_events e WHERE e.share_id = s.id AND e.kind = 'purged') > 1";
    assert_eq!(count(app.db(), purged_twice, sender).await, 0);

    // The last shares end: now their files go too.
    let last = half_ended.iter().map(|(ids, _)| ids[1].to_string()).collect::<Vec<_>>().join(", ");
    assert_eq!(app.set_ago("shares", &["expires_at"], 1, &format!("id IN ({last})")).await, 10);
    let after = local_gc(&app, NO_TIME, Duration::from_secs(60)).collect(50, Trigger::Cli).await.unwrap();
    assert_eq!(after.purged, 10, "{after:?}");
    for (_, paths) in half_ended {
        assert!(paths.iter().all(|path| !path.exists()));
    }
    assert_eq!(count(app.db(), unmarked, sender).await, 0);
}

both_backends!(files_go_with_the_last_share_that_needs_them_even_with_two_collectors_racing);
