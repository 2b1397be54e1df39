//! `watasu storage encrypt` (issue 37), on both stores and both databases: files stored plaintext
//! (encryption off) are encrypted in place, hold no plaintext byte afterwards and download as
//! before; a run stopped after one file, or between a copy and its switch, is finished by the
//! next; a file deleted while being encrypted is not brought back; a file not matching its digest
//! stays plaintext and is named.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use watasu::{
    key_check::load_file_keys,
    maintenance::Trigger,
    on_db,
    storage::{
        SweptStore, open_file_store,
        sealed::encrypt_in_place::{EncryptInPlace, Outcome, PlainFile},
    },
};

use crate::{
    cli_output::env_of,
    file_stores::count_files,
    sealed_files::{MARKER, Store, app_on, claimed_files, on_both_backends_and_stores, store_args, stored_files},
    support::{Backend, TestApp, count, process::run_watasu},
};

/// Two segments and a half, the marker spread through them, different for each file.
fn content(seed: u8) -> &'static [u8] {
    let mut bytes: Vec<u8> = (0..(2 * 64 * 1024 + 32 * 1024)).map(|i| ((i % 251) as u8) ^ seed).collect();
    for at in (0..bytes.len() - MARKER.len()).step_by(10_000) {
        bytes[at..at + MARKER.len()].copy_from_slice(MARKER);
    }
    Box::leak(bytes.into_boxed_slice())
}

/// The stored files under `dir` that hold the plaintext marker.
fn holds_marker(dir: &Path) -> Vec<PathBuf> {
    stored_files(dir)
        .into_iter()
        .filter(|(_, bytes)| bytes.windows(MARKER.len()).any(|w| w == MARKER))
        .map(|(path, _)| path)
        .collect()
}

/// The job over the app's store as it is, with the app's keys.
async fn job(app: &TestApp) -> EncryptInPlace {
    let keys = load_file_keys(&app.state.config, app.db()).await.unwrap();
    let plain: std::sync::Arc<dyn SweptStore> = open_file_store(&app.state.config).await.unwrap();
    EncryptInPlace::new(app.db().clone(), plain, keys)
}

async fn plain_file(app: &TestApp, share_id: i64) -> PlainFile {
    on_db!(app.db(), |pool| {
        sqlx::query_as(
            "SELECT f.id, f.storage_key, f.size_bytes, f.sha256, f.original_name
               FROM shares s JOIN files f ON f.handover_id = s.handover_id WHERE s.id = $1",
        )
        .bind(share_id)
        .fetch_one(pool)
        .await
        .unwrap()
    })
}

const SEALED: &str = "SELECT count(*) FROM shares s JOIN files f ON f.handover_id = s.handover_id
                       WHERE s.id = $1 AND f.sealing = 'sealed-v1' AND f.wrapped_key IS NOT NULL";
const UNFINISHED: &str = "SELECT count(*) FROM file_sealings WHERE file_id > $1";

async fn plaintext_files_are_encrypted_in_place_and_a_run_stopped_halfway_is_finished_by_the_next(
    backend: Backend,
    store: Store,
) {
    let (app, dir) = app_on(backend, store, false).await;
    let files = claimed_files(&app, (0..3).map(content)).await;
    assert_eq!(holds_marker(&dir).len(), 3, "stored plaintext");
    let job = job(&app).await;

    // Stopped after one file.
    let mut report = Default::default();
    assert!(job.run_batch(0, 1, &mut report).await.unwrap().is_some());
    assert_eq!(report.encrypted, 1);
    assert_eq!(count(app.db(), SEALED, files[0].share.id).await, 1);
    assert_eq!(holds_marker(&dir).len(), 2);
    // Stopped between the second file's sealed copy and its switch.
    let second = plain_file(&app, files[1].share.id).await;
    assert!(job.seal_copy(&second).await.unwrap().is_some());
    assert_eq!(count_files(&dir), 4, "three files and one copy");

    let mut args = vec!["storage", "encrypt", "--batch", "1"];
    let store_args = store_args(&app);
    args.extend(store_args.iter().map(String::as_str));
    let env = env_of(&app);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, out, err) = run_watasu(&args, &env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("encrypted 2") && out.contains("removed now 1"), "{out}");
    for file in &files {
        assert_eq!(count(app.db(), SEALED, file.share.id).await, 1, "share {} was not encrypted", file.share.id);
    }
    assert_eq!(holds_marker(&dir), Vec::<PathBuf>::new(), "a stored byte holds the plaintext");
    assert_eq!(count_files(&dir), 3, "the plaintexts and the stopped run's copy are gone");
    assert_eq!(count(app.db(), UNFINISHED, 0).await, 0);
    for file in &files {
        let whole = file.browser.fetch_file(&file.share.token, &[]).await;
        assert_eq!(whole.status(), 200);
        let body = whole.bytes().await.unwrap();
        let recorded = plain_file(&app, file.share.id).await.sha256;
        assert_eq!(hex::encode(Sha256::digest(&body)), recorded, "share {}", file.share.id);
        assert_eq!(body.as_ref(), file.content);
        let range = file.browser.fetch_file(&file.share.token, &[("Range", "bytes=70000-140000")]).await;
        assert_eq!(range.bytes().await.unwrap().as_ref(), &file.content[70000..=140000]);
    }
}

async fn a_file_deleted_while_being_encrypted_is_not_brought_back(backend: Backend, store: Store) {
    let (app, dir) = app_on(backend, store, false).await;
    let files = claimed_files(&app, [content(0)]).await;
    let job = job(&app).await;
    let file = plain_file(&app, files[0].share.id).await;
    let copy = job.seal_copy(&file).await.unwrap().unwrap();

    // The share ends and the GC deletes its file while the copy waits for its switch.
    app.consumed_ago(files[0].share.id, 2 * 24 * 3600).await;
    app.state.services.gc.gc().collect(10, Trigger::Cli).await.unwrap();
    assert_eq!(job.switch(&file, copy).await.unwrap(), Outcome::DeletedMeanwhile);

    assert_eq!(count_files(&dir), 0, "the copy was deleted with the file");
    let purged = "SELECT count(*) FROM files WHERE id = $1 AND purged_at IS NOT NULL AND sealing = 'plaintext'
                    AND wrapped_key IS NULL";
    assert_eq!(count(app.db(), purged, file.id).await, 1, "the row was switched after its deletion");
    assert_eq!(count(app.db(), UNFINISHED, 0).await, 0);
    let report = job.run(10).await.unwrap();
    assert_eq!((report.encrypted, report.cleaned_up), (0, 0));
    assert_eq!(count_files(&dir), 0);
}

async fn a_file_not_matching_its_digest_stays_plaintext_and_the_command_names_it(backend: Backend) {
    let (app, dir) = app_on(backend, Store::Local, false).await;
    let files = claimed_files(&app, (0..2).map(content)).await;
    let damaged = plain_file(&app, files[1].share.id).await;
    let path = dir.join(&damaged.storage_key);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[1000] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();

    let env = env_of(&app);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, out, err) = run_watasu(&["storage", "encrypt"], &env);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("encrypted 1"), "{out}");
    assert!(out.contains(&format!("left plaintext: file {} (f.bin)", damaged.id)), "{out}");
    assert_eq!(count(app.db(), SEALED, files[0].share.id).await, 1);
    assert_eq!(count(app.db(), SEALED, files[1].share.id).await, 0, "a file not matching its digest was switched");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "the plaintext was touched");
    assert_eq!(count_files(&dir), 2, "its copy was left behind");
    assert_eq!(count(app.db(), UNFINISHED, 0).await, 0);
}

crate::both_backends!(a_file_not_matching_its_digest_stays_plaintext_and_the_command_names_it);

on_both_backends_and_stores!(
    plaintext_files_are_encrypted_in_place_and_a_run_stopped_halfway_is_finished_by_the_next,
    a_file_deleted_while_being_encrypted_is_not_brought_back,
);
