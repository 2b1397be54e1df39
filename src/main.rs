//! The `watasu` binary: parses the command line (`watasu::cli::command`), sets up logging and the
//! runtime, runs the command and turns its end into an exit code.

use std::process::ExitCode;

use clap::{Parser, error::ErrorKind};
use watasu::{
    cli::{
        self, UsageError,
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
    let config = match Config::from_settings(cli.settings) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("watasu: {error}");
            return ExitCode::from(2);
        }
    };
    init_logging();
    let runtime = tokio::runtime::Runtime::new().expect("starting the async runtime");
    match runtime.block_on(cli::command::run(cli.command.unwrap_or(Command::Serve), config)) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of our output went away (`watasu share list | head`): it has what it wanted.
        Err(error) if cli::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => match error.downcast_ref::<UsageError>() {
            Some(usage) => {
                eprintln!("watasu: {usage}");
                ExitCode::from(2)
            }
            None => {
                eprintln!("watasu: {error:#}");
                ExitCode::FAILURE
            }
        },
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
