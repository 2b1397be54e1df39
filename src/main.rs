//! The `watasu` command: `serve` (the default), `migrate`, and administration subcommands.

use std::{io::Read, process::ExitCode};

use clap::{Parser, Subcommand, error::ErrorKind};
use watasu::{
    App,
    accounts::{CreateUserError, EmailAddress, Role, Users, password},
    config::{Config, Settings},
    open_database,
    secret::{SecretString, random_token},
};

#[derive(Parser)]
#[command(
    name = "watasu",
    version,
    about = "Hand one file to one person, safely."
)]
struct Cli {
    #[command(flatten)]
    settings: Settings,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the web app (what runs when no subcommand is given).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Manage sender accounts.
    #[command(subcommand)]
    User(UserCommand),
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create an account. Without --password-stdin a strong password is generated and printed once.
    Add {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: String,
        /// Make the account an admin (manages the team).
        #[arg(long)]
        admin: bool,
        /// Read the password from standard input.
        #[arg(long)]
        password_stdin: bool,
    },
}

/// A failure the person running the command can fix: printed as one line, exit code 2.
#[derive(Debug)]
struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UsageError {}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error)
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) =>
        {
            error.exit()
        }
        Err(error) => {
            eprintln!("watasu: {}", one_line(&error));
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
    match runtime.block_on(run(cli.command.unwrap_or(Command::Serve), config)) {
        Ok(()) => ExitCode::SUCCESS,
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

async fn run(command: Command, config: Config) -> anyhow::Result<()> {
    match command {
        Command::Serve => {
            let app = App::build(config).await?;
            app.run(shutdown_signal()).await?;
            tracing::info!("stopped");
            Ok(())
        }
        Command::Migrate => {
            let db = open_database(&config).await?;
            println!("migrations applied ({})", db.backend_name());
            Ok(())
        }
        Command::User(UserCommand::Add {
            email,
            name,
            admin,
            password_stdin,
        }) => add_user(&config, &email, &name, admin, password_stdin).await,
    }
}

async fn add_user(
    config: &Config,
    email: &str,
    name: &str,
    admin: bool,
    password_stdin: bool,
) -> anyhow::Result<()> {
    let email = EmailAddress::parse(email).map_err(UsageError)?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(UsageError("--name must be 1 to 100 characters".into()).into());
    }
    let (password, generated) = if password_stdin {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        (
            SecretString::new(text.trim_end_matches(['\r', '\n'])),
            false,
        )
    } else {
        (random_token(), true)
    };
    password::check_new_password(&password).map_err(|e| UsageError(e.to_string()))?;
    let db = open_database(config).await?;
    let hash = password::hash_password(password.clone()).await?;
    let role = if admin { Role::Admin } else { Role::Sender };
    match Users::new(db).create(&email, name, &hash, role).await {
        Ok(id) => {
            println!(
                "created {} account {} for {}",
                role.as_str(),
                id,
                email.as_str()
            );
            if generated {
                println!("password (shown once): {}", password.expose());
            }
            Ok(())
        }
        Err(CreateUserError::DuplicateEmail) => {
            Err(UsageError(format!("an account for {} already exists", email.as_str())).into())
        }
        Err(error) => Err(error.into()),
    }
}

/// The first line of a clap error, naming the environment variable behind a flag.
fn one_line(error: &clap::Error) -> String {
    let rendered = error.render().to_string();
    let first = rendered
        .lines()
        .next()
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ");
    let flag = error
        .get(clap::error::ContextKind::InvalidArg)
        .map(|a| a.to_string());
    match flag.as_deref().and_then(|f| f.strip_prefix("--")) {
        Some(flag) => {
            let name = flag.split([' ', '=']).next().unwrap_or(flag);
            let env = format!("WATASU_{}", name.to_uppercase().replace('-', "_"));
            let reason = error
                .get(clap::error::ContextKind::InvalidValue)
                .map(|_| first)
                .unwrap_or(first);
            // Never echo a secret setting's value back.
            if env.contains("URL") || env.contains("TOKEN") || env.contains("KEY") {
                format!("invalid value for {env} (--{name})")
            } else {
                format!("{reason} [{env}]")
            }
        }
        None => first.to_owned(),
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

async fn shutdown_signal() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    tracing::info!("shutting down: no new connections, finishing requests in flight");
}
