//! The command line's tree (settings, subcommands and their arguments) and what each runs.

use std::{path::PathBuf, time::Duration};

use clap::{Parser, Subcommand};

use crate::{
    App,
    config::{Config, Settings, parse_duration},
    i18n::Lang,
    open_database,
};

/// The whole command line: the settings, then at most one subcommand (`serve` when none).
#[derive(Parser)]
#[command(name = "watasu", version, about = "Hand one file to one person, safely.")]
pub struct Cli {
    #[command(flatten)]
    pub settings: Settings,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the web app (what runs when no subcommand is given).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Manage sender accounts.
    #[command(subcommand)]
    User(UserCommand),
    /// Create, list and revoke shares.
    #[command(subcommand)]
    Share(ShareCommand),
    /// Ask someone for files, and list the requests.
    #[command(subcommand)]
    Request(RequestCommand),
    /// Personal API tokens: create one for a sender, list and revoke them.
    #[command(subcommand)]
    Token(TokenCommand),
    /// List deletion cases, or re-apply them after restoring a backup.
    #[command(subcommand)]
    Deletion(DeletionCommand),
    /// Run one garbage-collection pass now and print what it did.
    Gc {
        /// Shares handled by this pass.
        #[arg(long, default_value_t = 1000)]
        limit: u32,
    },
    /// Move stored files into the object store, or encrypt the ones stored plaintext.
    #[command(subcommand)]
    Storage(StorageCommand),
    /// The file key stored files' keys are wrapped under.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// How the team signs in.
    #[command(subcommand)]
    SignIn(SignInCommand),
    /// Expiry sweeps with a run ledger (sessions, codes, invitations, mails, rate limits, retention).
    #[command(subcommand)]
    Maintenance(MaintenanceCommand),
    /// The instance secret kept in DATA_DIR/secret.key.
    #[command(subcommand)]
    SecretKey(SecretKeyCommand),
    /// Send files to recipients through a watasu server with an API token (from anywhere: reads
    /// no settings of this host); prints each recipient's link and the handover's id.
    Send(super::client::send::SendArgs),
    /// Where each recipient of a handover stands on a watasu server; --wait waits for them.
    Status(super::client::status::StatusArgs),
}

impl Command {
    /// Whether the command is a client of a server elsewhere, needing none of this host's
    /// settings: it runs before they are checked, through [`run_client`].
    pub fn is_client(&self) -> bool {
        matches!(self, Self::Send(_) | Self::Status(_))
    }
}

#[derive(Subcommand)]
pub enum SecretKeyCommand {
    /// Make a new key when DATA_DIR/secret.key is lost and cannot be restored: what the old key
    /// sealed (authenticator apps, passkeys, waiting mails, pending codes) stays unreadable.
    New,
}

#[derive(Subcommand)]
pub enum StorageCommand {
    /// Copy each file the database still needs into the object store, check it against its
    /// recorded SHA-256, then remove it from the folder; safe to stop and run again, while serving.
    Migrate,
    /// Encrypt each file stored plaintext in place: a sealed copy is written, read back and
    /// checked against its recorded SHA-256, the file switched to it and the plaintext deleted;
    /// safe to stop and run again (one run at a time), while serving.
    Encrypt {
        /// Files read from the database per query.
        #[arg(long, default_value_t = 100)]
        batch: u32,
    },
}

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Re-wrap every encrypted file's key from WATASU_FILE_KEY to WATASU_FILE_KEY_NEXT (set on
    /// every instance first), without touching the files; safe to stop and run again, while serving.
    Rotate {
        /// Files re-wrapped per query.
        #[arg(long, default_value_t = 500)]
        batch: u32,
    },
}

#[derive(Subcommand)]
pub enum SignInCommand {
    /// Turn password sign-in back on (after it was turned off for single sign-on only), for when
    /// the provider is unavailable.
    AllowPasswords,
}

#[derive(Subcommand)]
pub enum MaintenanceCommand {
    /// Run the sweeps now and print the ledger summary of the run.
    Run {
        /// One sweep: sessions, codes, invitations, outbox, rate_limits, share_retention, webhook_messages;
        /// or all.
        #[arg(long, default_value = "all")]
        kind: String,
    },
}

#[derive(Subcommand)]
pub enum ShareCommand {
    /// Store files, create a share for each recipient, mail each their link, print the links.
    Create {
        /// The sender's account email.
        #[arg(long)]
        from: String,
        /// A recipient's email address: their codes are sent only here (repeat for several, up to 20).
        #[arg(long, required = true)]
        to: Vec<String>,
        /// A file to hand over (repeat for several, up to 100).
        #[arg(long, required_unless_present_any = ["note", "note_stdin"])]
        file: Vec<PathBuf>,
        /// Hand over this secret note instead of files (visible to other users of this host while
        /// the command runs: prefer --note-stdin).
        #[arg(long, conflicts_with_all = ["file", "note_stdin"])]
        note: Option<String>,
        /// Hand over a secret note read from standard input instead of files.
        #[arg(long, conflicts_with = "file")]
        note_stdin: bool,
        /// How long the link works, like 1h or 7d (default WATASU_SHARE_TTL).
        #[arg(long, value_parser = parse_duration)]
        expires_in: Option<Duration>,
        /// A message for the recipient.
        #[arg(long, default_value = "")]
        message: String,
        /// Language of the recipient's mail: ja or en (default: the sender's).
        #[arg(long, value_parser = parse_lang)]
        lang: Option<Lang>,
        /// Let the recipients reply with files from their download page (a reply is a request).
        #[arg(long)]
        allow_reply: bool,
    },
    /// Print every share's id, status, recipient and expiry.
    List {
        /// Print JSON for scripts.
        #[arg(long)]
        json: bool,
    },
    /// End an active share at once; the GC then deletes its file.
    Revoke {
        /// The share's id or its link.
        id_or_url: String,
    },
}

#[derive(Subcommand)]
pub enum RequestCommand {
    /// Ask an uploader for files: mails them a link, prints it as the last line.
    Create(super::request::CreateArgs),
    /// Print every request's state and what arrived.
    List {
        /// Print JSON for scripts.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Make a token for a sender: prints it once, as the last line.
    Create(super::token::CreateArgs),
    /// Print every token (or one sender's): prefix, owner, scopes, expiry, last use.
    List(super::token::ListArgs),
    /// Revoke a token at once.
    Revoke {
        /// The token's id, or its prefix as the list shows it (wts_ab12cd34ef56).
        id_or_prefix: String,
    },
}

#[derive(Subcommand)]
pub enum DeletionCommand {
    /// Print every deletion case: reference, state, who opened it, when.
    List {
        /// Print JSON for scripts.
        #[arg(long)]
        json: bool,
    },
    /// After restoring a backup: delete again the data of every case in the deletion journal.
    Reapply,
}

pub(super) fn parse_lang(text: &str) -> Result<Lang, String> {
    Lang::from_code(text).ok_or_else(|| format!("'{text}' is not ja or en"))
}

#[derive(Subcommand)]
pub enum UserCommand {
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
    /// Remove every second factor of an account (its authenticator app and recovery codes) and
    /// end its sessions, for someone who lost them all.
    ResetFactors {
        /// The account's email address.
        email: String,
    },
}

/// Runs `command` to its end.
pub async fn run(command: Command, config: Config) -> anyhow::Result<()> {
    match command {
        Command::Serve => {
            let shutdown = shutdown_signal();
            let app = App::build(config).await?;
            app.run(shutdown).await?;
            tracing::info!("stopped");
            Ok(())
        }
        Command::Migrate => {
            let db = open_database(&config).await?;
            crate::outln!("migrations applied ({})", db.backend_name());
            Ok(())
        }
        Command::User(UserCommand::Add { email, name, admin, password_stdin }) => {
            super::user::add_user(&config, super::user::AddUser { email, name, admin, password_stdin }).await
        }
        Command::User(UserCommand::ResetFactors { email }) => super::user::reset_factors(&config, &email).await,
        Command::Share(ShareCommand::Create {
            from,
            to,
            file,
            note,
            note_stdin,
            expires_in,
            message,
            lang,
            allow_reply,
        }) => {
            let note = match (note, note_stdin) {
                (Some(note), _) => Some(note),
                (None, true) => Some(std::io::read_to_string(std::io::stdin())?),
                (None, false) => None,
            };
            let args =
                super::share::CreateShareArgs { from, to, files: file, note, expires_in, message, lang, allow_reply };
            super::share::create(&config, args).await
        }
        Command::Share(ShareCommand::List { json }) => super::share::list(&config, json).await,
        Command::Share(ShareCommand::Revoke { id_or_url }) => super::share::revoke(&config, &id_or_url).await,
        Command::Request(RequestCommand::Create(args)) => super::request::create(&config, args).await,
        Command::Request(RequestCommand::List { json }) => super::request::list(&config, json).await,
        Command::Token(TokenCommand::Create(args)) => super::token::create(&config, args).await,
        Command::Token(TokenCommand::List(args)) => super::token::list(&config, args).await,
        Command::Token(TokenCommand::Revoke { id_or_prefix }) => super::token::revoke(&config, &id_or_prefix).await,
        Command::Storage(StorageCommand::Migrate) => super::storage::migrate(&config).await,
        Command::Storage(StorageCommand::Encrypt { batch }) => super::storage::encrypt(&config, batch).await,
        Command::Keys(KeysCommand::Rotate { batch }) => super::keys::rotate(&config, batch).await,
        Command::Gc { limit } => super::gc::run(&config, limit).await,
        Command::Maintenance(MaintenanceCommand::Run { kind }) => super::maintenance::run(&config, &kind).await,
        Command::Deletion(DeletionCommand::List { json }) => super::deletion::list(&config, json).await,
        Command::Deletion(DeletionCommand::Reapply) => super::deletion::reapply(&config).await,
        Command::SignIn(SignInCommand::AllowPasswords) => super::sign_in::allow_passwords(&config).await,
        Command::SecretKey(SecretKeyCommand::New) => super::secret_key::new_key(&config).await,
        client => run_client(client).await,
    }
}

/// Runs a client command (see [`Command::is_client`]); any other is refused.
pub async fn run_client(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Send(args) => super::client::send::send(args).await,
        Command::Status(args) => super::client::status::status(args).await,
        _ => anyhow::bail!("not a client command"),
    }
}

/// The first line of a clap error, naming the environment variable behind a setting.
pub fn one_line(error: &clap::Error) -> String {
    let rendered = error.render().to_string();
    let first = rendered.lines().next().unwrap_or("invalid arguments").trim_start_matches("error: ");
    let flag = error.get(clap::error::ContextKind::InvalidArg).map(|a| a.to_string());
    let Some(name) = flag.as_deref().and_then(|f| f.strip_prefix("--")).and_then(|f| f.split([' ', '=']).next()) else {
        return first.to_owned();
    };
    let command = <Cli as clap::CommandFactory>::command();
    let env = command
        .get_arguments()
        .find(|arg| arg.get_long() == Some(name))
        .and_then(|arg| arg.get_env())
        .map(|env| env.to_string_lossy().into_owned());
    match env {
        // Never echo a secret setting's value back.
        Some(env) if ["URL", "TOKEN", "KEY"].iter().any(|s| env.contains(s)) => {
            format!("invalid value for {env} (--{name})")
        }
        Some(env) => format!("{first} [{env}]"),
        None => first.to_owned(),
    }
}

/// Resolves at SIGTERM or SIGINT. Both handlers are installed when this is called, before the
/// server starts: a signal that came before its handler would end the process on the spot, with
/// no grace for the requests and mails in flight.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("installing the SIGTERM handler");
    let mut interrupt = signal(SignalKind::interrupt()).expect("installing the SIGINT handler");
    async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        tracing::info!("shutting down: no new connections, finishing requests in flight");
    }
}
