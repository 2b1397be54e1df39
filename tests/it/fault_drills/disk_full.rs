//! A full file system, for real: the files folder is a 16 MiB tmpfs the test mounts (the tests run
//! as root; anywhere else mounting fails and so does this test, saying why). An upload that does
//! not fit is answered 507 with a page that says so, its partial file is removed, and the server
//! stays healthy and takes the same upload once there is room again.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use super::{PASSWORD, db_state, files_in, is_temp, sign_in, upload_body, upload_request};
use crate::{
    both_backends,
    support::{Backend, Browser, Page, TestApp},
};

const MIB: usize = 1 << 20;

/// A small tmpfs mounted over a folder, unmounted when dropped (also when the test fails).
pub(super) struct SmallFileSystem {
    dir: PathBuf,
}

impl SmallFileSystem {
    pub(super) fn mount(dir: &Path, size: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let options = format!("size={size},mode=0700");
        let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", &options, "watasu-drill"]).arg(dir).output();
        match mounted {
            Ok(output) if output.status.success() => Self { dir: dir.to_owned() },
            other => panic!(
                "the disk-full drill mounts a {size} tmpfs on {} and could not: {other:?}. \
                 Run the tests as root (CI does), or where mount(8) may mount tmpfs",
                dir.display()
            ),
        }
    }
}

impl Drop for SmallFileSystem {
    fn drop(&mut self) {
        // Lazy: the server may still hold the folder open if the test failed early.
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

async fn upload(browser: &Browser, base: &str, csrf: &str, content: &[u8]) -> Page {
    let body = upload_body(csrf, "client@example.test", "big.bin", content);
    Page::read(upload_request(&browser.client, base, body.into()).send().await.unwrap()).await
}

async fn an_upload_that_fills_the_disk_is_refused_clearly_leaves_nothing_and_the_next_one_works(backend: Backend) {
    let mut mount = None;
    let app = TestApp::spawn_with(backend, |s| {
        // The drill reads the folder's bytes as stored (encrypted files are drilled in sealed_files).
        s.encrypt_files = false;
        mount = Some(SmallFileSystem::mount(&s.data_dir.join("files"), "16m"));
    })
    .await;
    let mount = mount.unwrap();
    let files = app.data_dir.path().join("files");
    app.create_sender_with_password("s@example.test", "Sender Sato", PASSWORD).await;
    let browser = app.browser();
    sign_in(&browser, "s@example.test").await;
    let csrf = browser.get("/shares/new").await.csrf_token();

    // Something else has taken all but about 2 MiB; the upload is 3 MiB.
    std::fs::write(files.join("filler"), vec![0u8; 14 * MIB]).unwrap();
    let content: Vec<u8> = (0..3 * MIB).map(|i| (i % 253) as u8).collect();
    let before = db_state(app.db()).await;
    let page = upload(&browser, &app.base, &csrf, &content).await;

    assert_eq!(page.status, 507, "{}", page.body);
    assert!(page.header("content-type").is_some_and(|ct| ct.starts_with("text/html")));
    let full = watasu::i18n::Lang::Ja.text().errors.storage_full.title;
    assert_eq!(page.texts("h1"), [full], "{}", page.body);
    for leak in ["No space", "os error", "ENOSPC", "StoreError", "sqlx", "/tmp"] {
        assert!(!page.body.contains(leak), "the page leaks {leak:?}: {}", page.body);
    }
    assert_eq!(files_in(&files), [("filler".to_owned(), (14 * MIB) as u64)], "the partial file was left");
    assert_eq!(db_state(app.db()).await, before, "a refused upload changed the database");

    // Healthy all along, and the same upload goes through once there is room.
    assert_eq!(browser.get("/readyz").await.status, 200);
    assert_eq!(browser.get("/shares").await.status, 200);
    std::fs::remove_file(files.join("filler")).unwrap();
    let page = upload(&browser, &app.base, &csrf, &content).await.follow_created(&browser.client, &app.base).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let stored = files_in(&files);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(!is_temp(&stored[0].0) && stored[0].1 == content.len() as u64, "{stored:?}");
    assert_eq!(std::fs::read(files.join(&stored[0].0)).unwrap(), content);
    let after = db_state(app.db()).await;
    assert_eq!(after.shares.len(), before.shares.len() + 1);
    assert!(after.files.last().unwrap().contains(&stored[0].0));
    // Unmounted first, so the app's data folder can be removed whole.
    drop(mount);
    app.stop().await;
}

both_backends!(an_upload_that_fills_the_disk_is_refused_clearly_leaves_nothing_and_the_next_one_works);
