//! The command line as a real process: output into a pipe whose reader is gone ends quietly, and
//! `share create` refuses an over-long message with one clear line, by the same rule as the form.

use std::process::{Command, Stdio};

use watasu::share::MESSAGE_LIMIT;

use crate::{
    both_backends,
    lifecycle::quiet_app,
    support::{Backend, TestApp, count, process::run_watasu},
};

/// The environment that points the binary at the test app's data folder and database.
pub(crate) fn env_of(app: &TestApp) -> Vec<(&'static str, String)> {
    vec![
        ("WATASU_DATA_DIR", app.data_dir.path().to_str().unwrap().to_owned()),
        ("WATASU_DATABASE_URL", app.state.config.database_url.clone()),
        ("WATASU_SECRET_KEY", crate::support::test_secret_key()),
    ]
}

async fn every_command_writing_into_a_closed_pipe_exits_quietly(backend: Backend) {
    let app = quiet_app(backend).await;
    for _ in 0..3 {
        app.create_share().await;
    }
    let commands: [&[&str]; 7] = [
        &["share", "list"],
        &["share", "list", "--json"],
        &["gc"],
        &["maintenance", "run", "--kind", "codes"],
        &["deletion", "list"],
        &["deletion", "list", "--json"],
        &["migrate"],
    ];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_watasu"))
            .args(args)
            .envs(env_of(&app))
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before the command writes anything (`| head -0`).
        drop(child.stdout.take());
        let output = tokio::task::block_in_place(|| child.wait_with_output()).unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "watasu {args:?} panicked:\n{stderr}");
        assert!(!stderr.contains("Broken pipe"), "watasu {args:?} complained:\n{stderr}");
        assert_eq!(output.status.code(), Some(0), "watasu {args:?}:\n{stderr}");
    }
}

async fn share_create_refuses_an_over_long_message_with_one_clear_line(backend: Backend) {
    let app = quiet_app(backend).await;
    app.create_sender("sender@example.test", "Sender Sato").await;
    let file = app.data_dir.path().join("report.txt");
    std::fs::write(&file, b"the file\n").unwrap();
    let env = env_of(&app);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let create = |message: String| {
        let file = file.to_str().unwrap().to_owned();
        let env = env.clone();
        tokio::task::block_in_place(move || {
            run_watasu(
                &[
                    "share",
                    "create",
                    "--from",
                    "sender@example.test",
                    "--to",
                    "r@example.test",
                    "--file",
                    &file,
                    "--message",
                    &message,
                ],
                &env,
            )
        })
    };

    let (code, stdout, stderr) = create("あ".repeat(MESSAGE_LIMIT + 1));

    assert_eq!(code, 2, "{stdout}{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("watasu:")).collect();
    assert_eq!(
        lines,
        [format!(
            "watasu: --message: the message is {} characters long; at most {MESSAGE_LIMIT} are allowed",
            MESSAGE_LIMIT + 1
        )],
        "{stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await, 0);
    assert_eq!(count(app.db(), "SELECT count(*) FROM files WHERE id > $1", 0).await, 0);

    let (code, stdout, stderr) = create(format!("  {}  ", "あ".repeat(MESSAGE_LIMIT)));
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(count(app.db(), "SELECT count(*) FROM shares WHERE id > $1", 0).await, 1);
}

both_backends!(
    every_command_writing_into_a_closed_pipe_exits_quietly,
    share_create_refuses_an_over_long_message_with_one_clear_line
);
