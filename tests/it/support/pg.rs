//! A throwaway PostgreSQL cluster started by the tests themselves: initdb and pg_ctl from PATH or
//! /usr/lib/postgresql/*/bin, listening on 127.0.0.1 and a socket in a temp dir, run as an
//! unprivileged user when the tests run as root. A watchdog stops it when the test process ends.
//! A missing PostgreSQL fails the test with the command that installs it: it is never skipped.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

pub struct PgCluster {
    pub dir: PathBuf,
    pub port: u16,
    bin: PathBuf,
    user: Option<String>,
}

static SHARED: OnceLock<PgCluster> = OnceLock::new();

/// The cluster shared by every test of this process; each test still gets its own database.
pub fn shared() -> &'static PgCluster {
    SHARED.get_or_init(PgCluster::start)
}

impl PgCluster {
    /// Starts a new cluster (tests that stop and restart PostgreSQL use their own).
    pub fn start() -> Self {
        let bin = find_bin_dir().unwrap_or_else(|| {
            panic!(
                "PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or under \
                 /usr/lib/postgresql/*/bin. Install them: apt-get install postgresql"
            )
        });
        let user = run_as_user();
        let dir = tempfile::Builder::new().prefix("watasu-pg-").tempdir().expect("temp dir").keep();
        if let Some(user) = &user {
            chown(&dir, user);
        }
        let port = free_port();
        let data = dir.join("data");
        run(
            &bin,
            user.as_deref(),
            "initdb",
            &["-D", data.to_str().unwrap(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"],
        );
        let cluster = Self { dir, port, bin, user };
        cluster.pg_ctl_start();
        cluster.spawn_watchdog();
        cluster
    }

    pub fn pg_ctl_start(&self) {
        self.pg_ctl_start_with("-c fsync=off -c synchronous_commit=off -c full_page_writes=off");
    }

    /// Starts the (stopped) cluster with these server settings (`-c name=value …`) on top of its
    /// address, port and connection limit: the benchmarks start it with none, as durable as shipped.
    pub fn pg_ctl_start_with(&self, settings: &str) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=400 {settings}",
            self.port,
            self.dir.display()
        );
        let data = self.dir.join("data");
        let log = self.dir.join("server.log");
        run(
            &self.bin,
            self.user.as_deref(),
            "pg_ctl",
            &["-D", data.to_str().unwrap(), "-l", log.to_str().unwrap(), "-o", &options, "-w", "start"],
        );
    }

    pub fn pg_ctl_stop(&self) {
        let data = self.dir.join("data");
        run(&self.bin, self.user.as_deref(), "pg_ctl", &["-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"]);
    }

    /// The URL of database `name` (over TCP on 127.0.0.1).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates a fresh, uniquely named database and returns its URL.
    pub async fn create_database(&self) -> String {
        use sqlx::Connection;
        let name = format!("t_{}", watasu::secret::random_token().expose()[..16].to_owned());
        let mut conn =
            sqlx::PgConnection::connect(&self.url("postgres")).await.expect("connecting to the test cluster");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("creating a test database");
        self.url(&name)
    }

    /// Creates a fresh database whose tables live in `dir` (a tablespace there, owned by the
    /// cluster's user), and returns its URL: a test can then fill the disk under the tables while
    /// the cluster's own files (its WAL above all) stay where they are.
    pub async fn create_database_in(&self, dir: &Path) -> String {
        use sqlx::Connection;
        if let Some(user) = &self.user {
            chown(dir, user);
        }
        let name = format!("t_{}", watasu::secret::random_token().expose()[..16].to_owned());
        let mut conn =
            sqlx::PgConnection::connect(&self.url("postgres")).await.expect("connecting to the test cluster");
        for statement in [
            format!("CREATE TABLESPACE {name} LOCATION '{}'", dir.display()),
            format!("CREATE DATABASE {name} TABLESPACE {name}"),
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(statement)).execute(&mut conn).await.expect("creating a test database");
        }
        self.url(&name)
    }

    /// Stops the cluster and removes its files once this test process has exited.
    fn spawn_watchdog(&self) {
        let script = format!(
            "while [ -d /proc/{pid} ]; do sleep 1; done; \
             {pg_ctl} -D {data} -m immediate stop >/dev/null 2>&1; rm -rf {dir}",
            pid = std::process::id(),
            pg_ctl = self.bin.join("pg_ctl").display(),
            data = self.dir.join("data").display(),
            dir = self.dir.display(),
        );
        let mut command = self.command("sh");
        command.args(["-c", &script]);
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // The watchdog outlives this process on purpose; nobody waits for it.
        #[allow(clippy::zombie_processes)]
        command.spawn().expect("starting the PostgreSQL watchdog");
    }

    fn command(&self, program: &str) -> Command {
        user_command(self.user.as_deref(), program)
    }
}

fn user_command(user: Option<&str>, program: &str) -> Command {
    match user {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.args(["-u", user, "--", program]);
            command
        }
        None => Command::new(program),
    }
}

fn run(bin: &Path, user: Option<&str>, tool: &str, args: &[&str]) {
    let program = bin.join(tool);
    let output = user_command(user, program.to_str().unwrap()).args(args).output().expect("running a PostgreSQL tool");
    assert!(
        output.status.success(),
        "{tool} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn find_bin_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>());
    let debian =
        std::fs::read_dir("/usr/lib/postgresql").into_iter().flatten().flatten().map(|entry| entry.path().join("bin"));
    let mut candidates: Vec<PathBuf> = debian.collect();
    candidates.sort();
    candidates.reverse();
    candidates.extend(on_path);
    candidates.into_iter().find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists()).map(|dir| {
        // /usr/local/bin/initdb may be a link into the real bin dir, which also holds `postgres`.
        std::fs::canonicalize(dir.join("initdb")).ok().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or(dir)
    })
}

/// PostgreSQL refuses to run as root: use the `postgres` account (or `nobody`) then.
fn run_as_user() -> Option<String> {
    if !is_root() {
        return None;
    }
    ["postgres", "nobody"]
        .into_iter()
        .find(|user| Command::new("id").arg(user).output().is_ok_and(|o| o.status.success()))
        .map(str::to_owned)
}

/// Whether this process runs as root (its /proc entry is root's), read without `unsafe`.
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn chown(dir: &Path, user: &str) {
    let status = Command::new("chown").args(["-R", user, dir.to_str().unwrap()]).status().expect("chown");
    assert!(status.success(), "chown {user} {} failed", dir.display());
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
