//! The `watasu` binary: parses the command line (`watasu::cli::command`), sets up logging and the
//! runtime, runs the command and turns its end into an exit code.

use std::process::ExitCode;

use clap::{Parser, error::ErrorKind};
use watasu::{
    cli::{
        self, UsageError,
        client::Exit,
        command::{Cli, Command},
    },
    config::Config,
};

fn main() -> ExitCode {
    watasu::restrict_new_file_modes();
    watasu::memory::return_big_allocations();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => error.exit(),
        Err(error) => {
            eprintln!("watasu: {}", cli::command::one_line(&error));
            return ExitCode::from(2);
        }
    };
    let command = cli.command.unwrap_or(Command::Serve);
    let runtime = || tokio::runtime::Runtime::new().expect("starting the async runtime");
    // `send` and `status` talk to a server elsewhere: this host's settings are not theirs.
    if command.is_client() {
        return exit_code(runtime().block_on(cli::command::run_client(command)));
    }
    let config = match Config::from_settings(cli.settings) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("watasu: {error}");
            return ExitCode::from(2);
        }
    };
    init_logging();
    exit_code(runtime().block_on(cli::command::run(command, config)))
}

/// A command's end as the process's: 0, 2 for a usage error, a client's own code, else 1.
fn exit_code(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output went away (`watasu share list | head`): it has what it wanted.
        Err(error) if cli::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            if let Some(usage) = error.downcast_ref::<UsageError>() {
                eprintln!("watasu: {usage}");
                ExitCode::from(2)
            } else if let Some(exit) = error.downcast_ref::<Exit>() {
                eprintln!("watasu: {exit}");
                ExitCode::from(exit.code)
            } else {
                eprintln!("watasu: {error:#}");
                ExitCode::FAILURE
            }
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}
