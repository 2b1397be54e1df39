//! `watasu keys rotate` (issue 37): every live file's key re-wrapped from the file key to the next
//! one without touching the files, while two instances holding both keys keep serving every file;
//! a rotation stopped after a batch finishes when run again; afterwards the new key alone opens
//! every file, and a key destroyed before stays destroyed.

use watasu::{
    key_check::{FileKeyWrong, load_file_keys},
    maintenance::Trigger,
    on_db,
    secret::SecretString,
    storage::sealed::{
        KeyRing,
        rotate::{KeyedRows, Rotation},
    },
};

use crate::{
    both_backends,
    cli_output::env_of,
    sealed_files::{Shared, claimed_files},
    sealed_uploads::upload_in_pieces,
    support::{Backend, Browser, TestApp, count, process::run_watasu},
    uploads::{Tus, id_of},
};

const OLD_KEY: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
const NEW_KEY: &str = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";

/// Three segments and a bit, different for each file.
pub(crate) fn content(seed: u8) -> &'static [u8] {
    let bytes: Vec<u8> = (0..(3 * 64 * 1024 + 1000)).map(|i| ((i % 251) as u8) ^ seed).collect();
    Box::leak(bytes.into_boxed_slice())
}

/// An instance on `first`'s database and folder with these file keys.
async fn instance(first: &TestApp, file_key: &str, next: Option<&str>) -> TestApp {
    let files = first.data_dir.path().join("files");
    TestApp::spawn_on(tempfile::tempdir().unwrap(), &first.state.config.database_url, |s| {
        s.file_key = Some(SecretString::new(file_key));
        s.file_key_next = next.map(SecretString::new);
        s.storage.location = Some(files.to_str().unwrap().to_owned());
    })
    .await
}

/// `browser`'s cookies, sent to `app` (cookies name the host, not the port).
fn browser_on(browser: &Browser, app: &TestApp) -> Browser {
    Browser { client: browser.client.clone(), jar: browser.jar.clone(), base: app.base.clone() }
}

/// Every file downloads whole and in a range through `app`, as it was sent.
pub(crate) async fn all_download(files: &[Shared], app: &TestApp) {
    for file in files {
        let browser = browser_on(&file.browser, app);
        let whole = browser.fetch_file(&file.share.token, &[]).await;
        assert_eq!(whole.status(), 200, "share {} on {}", file.share.id, app.base);
        assert_eq!(whole.bytes().await.unwrap().as_ref(), file.content, "share {}", file.share.id);
        let range = browser.fetch_file(&file.share.token, &[("Range", "bytes=70000-140000")]).await;
        assert_eq!(range.status(), 206);
        assert_eq!(range.bytes().await.unwrap().as_ref(), &file.content[70000..=140000]);
    }
}

async fn live_keys_under(app: &TestApp, key_id: &str) -> i64 {
    on_db!(app.db(), |pool| {
        sqlx::query_scalar("SELECT count(*) FROM files WHERE wrapped_key IS NOT NULL AND file_key_id = $1")
            .bind(key_id)
            .fetch_one(pool)
            .await
            .unwrap()
    })
}

fn ring(current: &str, next: Option<&str>) -> KeyRing {
    let keys = |hex: &str| watasu::storage::sealed::FileKeys::new(&watasu::secret::SecretKey::from_hex(hex).unwrap());
    KeyRing::new(keys(current), next.map(keys))
}

async fn two_instances_serve_every_file_while_a_rotation_runs_and_the_new_key_alone_opens_them_after(backend: Backend) {
    let first = TestApp::spawn_with(backend, |s| s.file_key = Some(SecretString::new(OLD_KEY))).await;
    let files = claimed_files(&first, (0..5).map(content)).await;
    // One file whose key the GC destroyed before the rotation.
    let gone = files.last().unwrap().share.id;
    first.consumed_ago(gone, 2 * 24 * 3600).await;
    first.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    let files = &files[..4];
    let (old_id, new_id) =
        (ring(OLD_KEY, None).current().id().to_owned(), ring(NEW_KEY, None).current().id().to_owned());
    assert_eq!(live_keys_under(&first, &old_id).await, 4);

    let (a, b) = (instance(&first, OLD_KEY, Some(NEW_KEY)).await, instance(&first, OLD_KEY, Some(NEW_KEY)).await);
    // Downloads run through both instances the whole time the rotation does.
    let running = tokio::sync::watch::channel(true);
    let downloads = {
        let browsers: Vec<(Browser, String, &'static [u8])> = files
            .iter()
            .flat_map(|f| {
                [
                    (browser_on(&f.browser, &a), f.share.token.clone(), f.content),
                    (browser_on(&f.browser, &b), f.share.token.clone(), f.content),
                ]
            })
            .collect();
        let mut stop = running.1.clone();
        tokio::spawn(async move {
            let mut rounds = 0;
            while *stop.borrow_and_update() || rounds == 0 {
                for (browser, token, content) in &browsers {
                    let response = browser.fetch_file(token, &[]).await;
                    assert_eq!(response.status(), 200);
                    assert_eq!(response.bytes().await.unwrap().as_ref(), *content, "a download during the rotation");
                }
                rounds += 1;
            }
            rounds
        })
    };

    let rotation = Rotation::new(a.db().clone(), &ring(OLD_KEY, Some(NEW_KEY))).unwrap();
    let mut report = Default::default();
    let mut after = 0;
    while let Some(last) = rotation.run_batch(KeyedRows::Files, after, 1, &mut report).await.unwrap() {
        after = last;
        // Between batches some keys are under each file key: both instances open every file.
        all_download(files, &a).await;
        all_download(files, &b).await;
    }
    running.0.send(false).unwrap();
    assert!(downloads.await.unwrap() >= 1);
    assert_eq!(report.rewrapped, 4);
    assert!(report.not_opened.is_empty());
    assert_eq!(live_keys_under(&a, &new_id).await, 4, "every live key is under the new file key");
    let destroyed = "SELECT count(*) FROM shares s JOIN files f ON f.handover_id = s.handover_id
                      WHERE s.id = $1 AND f.wrapped_key IS NULL AND f.key_destroyed_at IS NOT NULL";
    assert_eq!(count(a.db(), destroyed, gone).await, 1, "a destroyed key came back");
    a.stop().await;
    b.stop().await;

    // The old key alone is refused now; the new key alone opens every file.
    let error = load_file_keys(&first.state.config, first.db()).await.unwrap_err();
    assert_eq!(error.downcast_ref::<FileKeyWrong>().map(|wrong| wrong.files), Some(4), "{error:#}");
    let after_rotation = instance(&first, NEW_KEY, None).await;
    all_download(files, &after_rotation).await;
}

async fn a_rotation_stopped_after_one_batch_finishes_when_run_again_by_the_command(backend: Backend) {
    let first = TestApp::spawn_with(backend, |s| s.file_key = Some(SecretString::new(OLD_KEY))).await;
    let files = claimed_files(&first, (0..3).map(content)).await;
    let (old_id, new_id) =
        (ring(OLD_KEY, None).current().id().to_owned(), ring(NEW_KEY, None).current().id().to_owned());

    let rotation = Rotation::new(first.db().clone(), &ring(OLD_KEY, Some(NEW_KEY))).unwrap();
    let mut report = Default::default();
    assert!(rotation.run_batch(KeyedRows::Files, 0, 1, &mut report).await.unwrap().is_some());
    assert_eq!((live_keys_under(&first, &old_id).await, live_keys_under(&first, &new_id).await), (2, 1));
    // A finished resumable upload not shared yet holds its key on its upload row: it moves too.
    let tus = Tus::sender(&first, "waiting-upload@example.test").await;
    let upload = upload_in_pieces(&tus, content(9)).await;
    let upload_key_id = "SELECT file_key_id FROM uploads WHERE public_id = $1 AND wrapped_key IS NOT NULL";

    let mut env = env_of(&first);
    env.push(("WATASU_FILE_KEY", OLD_KEY.to_owned()));
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, _, err) = run_watasu(&["keys", "rotate"], &env_refs);
    assert_eq!(code, 2, "without the next key the command says what to set: {err}");
    assert!(err.contains("WATASU_FILE_KEY_NEXT"), "{err}");

    let mut with_next = env_refs.clone();
    with_next.push(("WATASU_FILE_KEY_NEXT", NEW_KEY));
    let (code, out, err) = run_watasu(&["keys", "rotate", "--batch", "1"], &with_next);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("re-wrapped 3 file key(s)"), "{out}");
    assert!(out.contains(&new_id) && out.contains("set WATASU_FILE_KEY"), "{out}");
    assert!(!out.contains(NEW_KEY) && !out.contains(OLD_KEY), "a key was printed: {out}");
    assert_eq!(live_keys_under(&first, &new_id).await, 3);
    let moved: String = on_db!(first.db(), |pool| {
        sqlx::query_scalar(upload_key_id).bind(id_of(&upload)).fetch_one(pool).await.unwrap()
    });
    assert_eq!(moved, new_id, "the waiting upload's key is under the new file key");

    // The start-up check counts the waiting upload too: the new key alone passes.
    let after_rotation = instance(&first, NEW_KEY, None).await;
    all_download(&files, &after_rotation).await;
}

both_backends!(
    two_instances_serve_every_file_while_a_rotation_runs_and_the_new_key_alone_opens_them_after,
    a_rotation_stopped_after_one_batch_finishes_when_run_again_by_the_command,
);
