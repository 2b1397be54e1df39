//! Moving the local folder into the object store while serving (`watasu storage migrate`): every
//! needed file is copied, checked and removed from the folder, a second run finds nothing to do,
//! a stopped run carries on, a file whose copy is damaged stays, and a file deleted by the GC
//! while the migration copies it is gone from both places afterwards.

use std::{sync::Arc, time::Duration};

use tokio::io::AsyncReadExt;
use watasu::{
    lifecycle::ShareGc,
    maintenance::Trigger,
    storage::{
        FallbackStore, FileStore, LocalFileStore, ObjectFileStore, StoreError, SweptStore,
        migrate::{MigrationReport, migrate_folder},
    },
};

use crate::{
    both_backends,
    support::{Backend, TestApp, TestShare, s3},
};
use watasu::sql;

const HOUR: Duration = Duration::from_secs(3600);

struct Stores {
    folder: LocalFileStore,
    objects: Arc<ObjectFileStore>,
    /// What the server reads and deletes through while the migration runs.
    serving: Arc<dyn SweptStore>,
    /// The folder where s3s-fs keeps the objects.
    bucket_dir: std::path::PathBuf,
}

fn stores(app: &TestApp) -> Stores {
    let folder = LocalFileStore::new(app.data_dir.path().join("files")).unwrap();
    let (objects, bucket) = s3::shared().store();
    let objects = Arc::new(objects);
    let serving = Arc::new(FallbackStore::new(objects.clone(), folder.clone()));
    Stores { folder, objects, serving, bucket_dir: s3::shared().bucket_dir(&bucket) }
}

async fn key_of(app: &TestApp, share: &TestShare) -> String {
    crate::lifecycle::text(
        app.db(),
        "SELECT f.storage_key FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1",
        share.id,
    )
    .await
}

async fn read(store: &dyn FileStore, key: &str) -> Result<Vec<u8>, StoreError> {
    let mut bytes = Vec::new();
    store.open(key).await?.into_reader().read_to_end(&mut bytes).await?;
    Ok(bytes)
}

async fn shares(app: &TestApp, count: usize, content: &'static [u8]) -> Vec<(TestShare, String)> {
    let sender =
        app.create_sender(&format!("sender-{count}-{}@example.test", crate::support::rand_suffix()), "Sato").await;
    let mut made = Vec::new();
    for _ in 0..count {
        let share = app.fake_share().sender(sender).file("f.txt", content).create().await;
        let key = key_of(app, &share).await;
        made.push((share, key));
    }
    made
}

/// An app without the after-response GC whose files are stored plaintext, so the tests can read
/// the stores' bytes as they are.
async fn plaintext_app(backend: Backend) -> TestApp {
    TestApp::spawn_settled(backend, |s| {
        s.access_time_gc = false;
        s.encrypt_files = false;
    })
    .await
}

async fn a_migration_moves_every_needed_file_and_a_second_run_finds_nothing(backend: Backend) {
    let app = plaintext_app(backend).await;
    let stores = stores(&app);
    let made = shares(&app, 3, b"needed\n").await;
    let stray = watasu::secret::random_token().expose().to_owned();
    std::fs::write(app.data_dir.path().join("files").join(&stray), b"no row names me").unwrap();

    let report = migrate_folder(&app.state.lifecycle, &stores.folder, &stores.objects).await.unwrap();

    assert_eq!(report, MigrationReport { moved: 3, not_needed: 1, ..MigrationReport::default() });
    for (_, key) in &made {
        assert_eq!(read(stores.objects.as_ref(), key).await.unwrap(), b"needed\n");
        assert!(matches!(read(&stores.folder, key).await, Err(StoreError::NotFound)), "moved out of the folder");
        assert_eq!(read(stores.serving.as_ref(), key).await.unwrap(), b"needed\n", "the server still reads it");
    }
    assert!(app.data_dir.path().join("files").join(&stray).exists(), "left for the leftover sweep");
    let again = migrate_folder(&app.state.lifecycle, &stores.folder, &stores.objects).await.unwrap();
    assert_eq!(again, MigrationReport { not_needed: 1, ..MigrationReport::default() });
}

async fn a_stopped_run_carries_on_and_a_damaged_file_stays_where_it_is(backend: Backend) {
    let app = plaintext_app(backend).await;
    let stores = stores(&app);
    let made = shares(&app, 2, b"whole\n").await;
    let (copied, damaged) = (&made[0].1, &made[1].1);
    // A run stopped after its copy of `copied`, before removing it from the folder.
    let source = stores.folder.open(copied).await.unwrap();
    stores.objects.put_as(copied, source.into_reader(), 100).await.unwrap();
    std::fs::write(app.data_dir.path().join("files").join(damaged), b"wh0le\n").unwrap();

    let report = migrate_folder(&app.state.lifecycle, &stores.folder, &stores.objects).await.unwrap();

    assert_eq!(report, MigrationReport { already_there: 1, mismatched: 1, ..MigrationReport::default() });
    assert!(matches!(read(&stores.folder, copied).await, Err(StoreError::NotFound)));
    assert_eq!(read(&stores.folder, damaged).await.unwrap(), b"wh0le\n", "kept for someone to look at");
    assert!(matches!(read(stores.objects.as_ref(), damaged).await, Err(StoreError::NotFound)), "no bad copy");
}

async fn the_leftover_sweep_reaches_both_places_while_files_move(backend: Backend) {
    let app = plaintext_app(backend).await;
    let stores = stores(&app);
    let made = shares(&app, 2, b"live\n").await;
    migrate_folder(&app.state.lifecycle, &stores.folder, &stores.objects).await.unwrap();
    let live_in_folder = shares(&app, 1, b"not moved yet\n").await;
    let (in_folder, in_bucket) =
        (watasu::secret::random_token().expose().to_owned(), watasu::secret::random_token().expose().to_owned());
    let folder_orphan = app.data_dir.path().join("files").join(&in_folder);
    std::fs::write(&folder_orphan, b"no row names me").unwrap();
    stores.objects.put_as(&in_bucket, Box::pin(&b"no row names me either"[..]), 100).await.unwrap();
    let two_hours_ago = std::time::SystemTime::now() - 2 * HOUR;
    let bucket_orphan = stores.bucket_dir.join("files").join(&in_bucket);
    for path in [&folder_orphan, &bucket_orphan] {
        std::fs::File::options().write(true).open(path).unwrap().set_modified(two_hours_ago).unwrap();
    }
    let gc = ShareGc::new(app.state.lifecycle.clone(), stores.serving.clone(), app.state.events.clone());

    let report = gc.remove_leftovers().await.unwrap();

    assert_eq!(report.orphan_files, 2, "{report:?}");
    assert!(!folder_orphan.exists() && !bucket_orphan.exists());
    for (_, key) in made.iter().chain(&live_in_folder) {
        assert!(read(stores.serving.as_ref(), key).await.is_ok(), "a live file went");
    }
}

async fn files_the_gc_deletes_during_a_migration_are_gone_from_both_places(backend: Backend) {
    let app = plaintext_app(backend).await;
    let stores = stores(&app);
    let gc = ShareGc::new(app.state.lifecycle.clone(), stores.serving.clone(), app.state.events.clone());
    // Files large enough that a copy takes a while, and deletions one per pass, so that some
    // fall inside the copy of their own file; several rounds, as one may miss.
    static CONTESTED: [u8; 512 * 1024] = [7; 512 * 1024];
    for round in 0..3 {
        let made = shares(&app, 30, &CONTESTED).await;
        // Every other share has expired: the GC and the migration both want its file.
        for (share, _) in made.iter().step_by(2) {
            crate::support::execute(
                app.db(),
                sql!("UPDATE shares SET expires_at = " now " - " secs("60") " WHERE id = $1"),
                share.id,
            )
            .await;
        }

        let (migration, purged) =
            tokio::join!(migrate_folder(&app.state.lifecycle, &stores.folder, &stores.objects), async {
                let mut purged = 0;
                while let Ok(report) = gc.collect(1, Trigger::Cli).await
                    && report.purged > 0
                {
                    purged += report.purged;
                }
                purged
            },);

        let migration = migration.unwrap();
        assert_eq!(purged, 15, "round {round}");
        assert_eq!(migration.mismatched, 0, "round {round}: {migration:?}");
        for (i, (_, key)) in made.iter().enumerate() {
            let object = read(stores.objects.as_ref(), key).await;
            let local = read(&stores.folder, key).await;
            assert!(matches!(local, Err(StoreError::NotFound)), "round {round}, file {i}: the folder is empty");
            if i % 2 == 0 {
                assert!(matches!(object, Err(StoreError::NotFound)), "round {round}: file {i} outlived its deletion");
            } else {
                assert!(object.unwrap() == CONTESTED, "round {round}: file {i} was lost");
            }
        }
    }
}

both_backends!(
    a_migration_moves_every_needed_file_and_a_second_run_finds_nothing,
    a_stopped_run_carries_on_and_a_damaged_file_stays_where_it_is,
    the_leftover_sweep_reaches_both_places_while_files_move,
    files_the_gc_deletes_during_a_migration_are_gone_from_both_places
);

async fn watasu_storage_migrate_moves_the_folder_and_refuses_a_local_store(backend: Backend) {
    let install = crate::support::installation::Installation::new(backend).await;
    install.add_sender("sender@example.test");
    let file = install.dir.path().join("report.txt");
    std::fs::write(&file, b"moving house\n").unwrap();
    install.run(&[
        "share",
        "create",
        "--from",
        "sender@example.test",
        "--to",
        "r@example.test",
        "--file",
        file.to_str().unwrap(),
        "--encrypt-files=false",
    ]);
    let server = s3::shared();
    let bucket = server.create_bucket();
    let storage = server.serve_args(&bucket);
    let migrate: Vec<&str> = ["storage", "migrate"].into_iter().chain(storage.iter().map(String::as_str)).collect();

    let first = install.run(&migrate);
    let again = install.run(&migrate);

    assert!(first.starts_with("moved 1, already in the store 0, deleted meanwhile 0;"), "{first}");
    assert!(again.starts_with("moved 0,"), "{again}");
    assert_eq!(std::fs::read_dir(install.files_dir()).unwrap().count(), 0, "the folder is empty");
    let objects: Vec<_> = std::fs::read_dir(server.bucket_dir(&bucket).join("files")).unwrap().flatten().collect();
    assert_eq!(objects.len(), 1);
    assert_eq!(std::fs::read(objects[0].path()).unwrap(), b"moving house\n");
    let dir = install.dir.path().to_str().unwrap();
    let (code, _, stderr) = tokio::task::block_in_place(|| {
        crate::support::process::run_watasu(
            &["storage", "migrate", "--data-dir", dir, "--database-url", &install.url],
            &[],
        )
    });
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("WATASU_STORAGE names a local folder"), "{stderr}");
}

both_backends!(watasu_storage_migrate_moves_the_folder_and_refuses_a_local_store);

/// With a bucket configured and files still in DATA_DIR/files, the server's store reads both.
#[tokio::test]
async fn a_bucket_setting_with_files_left_in_the_folder_reads_through_to_them() {
    let dir = tempfile::tempdir().unwrap();
    let key = watasu::secret::random_token().expose().to_owned();
    std::fs::create_dir_all(dir.path().join("files")).unwrap();
    std::fs::write(dir.path().join("files").join(&key), b"not moved yet\n").unwrap();
    let smtp = crate::support::SmtpSink::start().await;
    let mut settings = crate::support::test_settings(dir.path(), "sqlite://unused.db", &smtp);
    let server = s3::shared();
    settings.storage = server.storage_settings(&server.create_bucket());
    let config = watasu::config::Config::from_settings(settings).unwrap();

    let store = watasu::storage::open_file_store(&config).await.unwrap();

    assert_eq!(read(store.as_ref(), &key).await.unwrap(), b"not moved yet\n");
    let stored = store.put(Box::pin(&b"new"[..]), 10).await.unwrap();
    assert!(!dir.path().join("files").join(&stored.key).exists(), "new files go to the bucket");
    assert_eq!(read(store.as_ref(), &stored.key).await.unwrap(), b"new");
}
