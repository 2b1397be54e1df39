//! The data folder as the CLI leaves it: private to its owner however it was first created.

use std::{os::unix::fs::PermissionsExt, path::Path};

use crate::{
    both_backends,
    support::{Backend, fresh_database, process::run_watasu},
};

/// Every folder and file under `dir`, with its permission bits.
fn modes_under(dir: &Path) -> Vec<(String, u32)> {
    let mut found = vec![(dir.display().to_string(), std::fs::metadata(dir).unwrap().permissions().mode() & 0o777)];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(modes_under(&path));
        } else {
            found.push((path.display().to_string(), std::fs::metadata(&path).unwrap().permissions().mode() & 0o777));
        }
    }
    found
}

async fn a_data_folder_first_made_by_cli_commands_is_owner_only_with_its_database_files_and_mails(backend: Backend) {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    // The database URL is made in another folder so that the CLI creates `data` itself.
    let url_dir = tempfile::tempdir().unwrap();
    let url = match backend {
        Backend::Sqlite => format!("sqlite://{}?mode=rwc", data.join("watasu.db").display()),
        Backend::Postgres => fresh_database(backend, url_dir.path()).await,
    };
    let upload = root.path().join("report.txt");
    std::fs::write(&upload, b"the file contents\n").unwrap();
    let (data_arg, upload_arg) = (data.to_str().unwrap(), upload.to_str().unwrap());
    let common = ["--data-dir", data_arg, "--database-url", &url];

    let args = [&["user", "add", "--email", "sato@example.test", "--name", "Sato"][..], &common].concat();
    let (code, _, stderr) = tokio::task::block_in_place(|| run_watasu(&args, &[]));
    assert_eq!(code, 0, "{stderr}");
    let args = [
        &["share", "create", "--from", "sato@example.test", "--to", "r@example.test", "--file", upload_arg][..],
        &common,
    ]
    .concat();
    let (code, _, stderr) = tokio::task::block_in_place(|| run_watasu(&args, &[]));
    assert_eq!(code, 0, "{stderr}");

    let modes = modes_under(&data);
    let names: Vec<&str> = modes.iter().map(|(p, _)| p.as_str()).collect();
    assert!(names.iter().any(|p| p.ends_with(".eml")), "no mail was written: {names:?}");
    assert!(names.iter().any(|p| p.contains("/files/")), "no file was stored: {names:?}");
    if backend == Backend::Sqlite {
        assert!(names.iter().any(|p| p.ends_with("watasu.db")), "no database: {names:?}");
    }
    for (path, mode) in &modes {
        let wanted = if Path::new(path).is_dir() { 0o700 } else { 0o600 };
        assert_eq!(*mode, wanted, "{path} is {mode:o}");
    }
}

both_backends!(a_data_folder_first_made_by_cli_commands_is_owner_only_with_its_database_files_and_mails);
