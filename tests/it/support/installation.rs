//! One installation of the real binary: a data folder, a database and a mail relay that outlive
//! the `watasu serve` processes started (and killed) on top of them, and the administration
//! commands run against it.

use std::{os::unix::process::ExitStatusExt, time::Duration};

use watasu::db::Db;

use super::{
    Backend, SmtpSink, fresh_database,
    process::{Server, free_local_addr, run_watasu},
};

pub struct Installation {
    pub dir: tempfile::TempDir,
    pub url: String,
    pub smtp: SmtpSink,
    pub db: Db,
}

impl Installation {
    pub async fn new(backend: Backend) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = fresh_database(backend, dir.path()).await;
        let smtp = SmtpSink::start().await;
        let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
        db.migrate().await.unwrap();
        Self { dir, url, smtp, db }
    }

    pub fn files_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("files")
    }

    /// Settings every command shares, besides the data folder.
    fn settings(&self) -> Vec<String> {
        [
            "--database-url",
            &self.url,
            "--smtp-url",
            &self.smtp.url(),
            "--secret-key",
            &crate::support::test_secret_key(),
            "--mail-from",
            "watasu <watasu@example.test>",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Runs an administration command on this installation.
    pub fn run(&self, args: &[&str]) -> String {
        let dir = self.dir.path().to_str().unwrap();
        let settings = self.settings();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--data-dir", dir]);
        all.extend(settings.iter().map(String::as_str));
        let (code, stdout, stderr) = tokio::task::block_in_place(|| run_watasu(&all, &[]));
        assert_eq!(code, 0, "watasu {args:?} failed: {stdout}{stderr}");
        stdout
    }

    /// A sender account; returns the password it was given.
    pub fn add_sender(&self, email: &str) -> String {
        let stdout = self.run(&["user", "add", "--email", email, "--name", "Drill Sender"]);
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("password (shown once): "))
            .unwrap_or_else(|| panic!("no generated password in {stdout:?}"))
            .trim()
            .to_owned()
    }

    /// `watasu serve` on a free port.
    pub fn start(&self, extra: &[&str]) -> Server {
        self.start_on(&free_local_addr(), extra)
    }

    /// `watasu serve` on `addr` (again, after a kill, where a proxy expects it).
    pub fn start_on(&self, addr: &str, extra: &[&str]) -> Server {
        self.start_instance(addr, self.dir.path(), extra)
    }

    /// Another `watasu serve` on the same database, mail relay and key but a data folder of its
    /// own, as a second host would run it.
    pub fn start_instance(&self, addr: &str, data_dir: &std::path::Path, extra: &[&str]) -> Server {
        let mut args = self.settings();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tokio::task::block_in_place(|| Server::start_on(addr, data_dir, &args))
    }
}

/// SIGKILL, and the process is gone.
pub fn kill_9(server: &mut Server) {
    server.signal("KILL");
    let status = tokio::task::block_in_place(|| server.child.wait()).unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
}
