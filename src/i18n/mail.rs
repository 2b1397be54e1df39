//! The words of the mails watasu sends: the code, the link to a file, the download receipt and
//! the invitation. (The second factor's and the deletion's mails keep their words with theirs.)

/// The mails' words.
pub struct MailText {
    pub code_subject: &'static str,
    pub code_intro: &'static str,
    pub code_validity: &'static str,
    pub code_ignore: &'static str,
    pub notify_subject_after: &'static str,
    pub notify_open: &'static str,
    pub notify_steps: &'static str,
    pub notify_until: &'static str,
    pub notify_message: &'static str,
    pub notify_button: &'static str,
    /// Before the file's name and size, unless the sender asked the mail to name none.
    pub notify_file: &'static str,
    /// Before the files' names and sizes when there are several.
    pub notify_files: &'static str,
    /// After the listed files: "{n}" more are not listed.
    pub notify_more_files: &'static str,
    /// The files' count when the sender asked the mail to name none: "{n}" files.
    pub notify_file_count: &'static str,
    /// The receipt's subject: `{recipient}` downloaded `{file}`.
    pub receipt_subject: &'static str,
    pub receipt_body: &'static str,
    pub receipt_recipient: &'static str,
    pub receipt_file: &'static str,
    /// Before the names of a handover's several files, each on a line: "{n}" is how many.
    pub receipt_files: &'static str,
    /// A handover's several files in a subject: "{n}" is how many.
    pub files_count: &'static str,
    pub receipt_started: &'static str,
    pub receipt_completed: &'static str,
    pub receipt_off: &'static str,
    /// The lock notice's subject; `{recipient}` is the share's recipient.
    pub locked_subject: &'static str,
    pub locked_body: &'static str,
    /// The lock notice's and the receipt's button to the share page.
    pub open_share: &'static str,
    pub invite_subject: &'static str,
    pub invite_body: &'static str,
    pub invite_valid: &'static str,
    pub invite_button: &'static str,
    pub link_fallback: &'static str,
    pub footer: &'static str,
}

pub const EN: MailText = MailText {
    code_subject: "Your watasu confirmation code",
    code_intro: "Your confirmation code is:",
    code_validity: concat!(
        "It is valid for ",
        crate::code_validity_minutes!(),
        " minutes. Enter it on the page where you asked for it."
    ),
    code_ignore: "If you did not ask for this code, you can ignore this email.",
    notify_subject_after: " has sent you a file",
    notify_open: "Open this link to receive it:",
    notify_steps: "You will be asked to confirm your email address with a code. The file can be downloaded once.",
    notify_until: "The link works until:",
    notify_message: "Their message:",
    notify_button: "Receive the file",
    notify_file: "File:",
    notify_files: "Files:",
    notify_more_files: "and {n} more",
    notify_file_count: "{n} files",
    receipt_subject: "{recipient} downloaded {file}",
    receipt_body: "The file you sent has been downloaded by its recipient. It will be deleted from the server shortly.",
    receipt_recipient: "Recipient:",
    receipt_file: "File:",
    receipt_files: "Files ({n}):",
    files_count: "{n} files",
    receipt_started: "Download started:",
    receipt_completed: "Download completed:",
    receipt_off: "You can turn these emails off for each share when you send it.",
    locked_subject: "Your share to {recipient} is locked after wrong codes",
    locked_body: "Too many wrong codes were entered for a file you sent, so its link accepts no more codes until you act.",
    open_share: "Open the share",
    invite_subject: "You are invited to send files with watasu",
    invite_body: "You have been invited to send files with watasu. Open this link to choose a password:",
    invite_valid: "The link works once, for 72 hours.",
    invite_button: "Choose a password",
    link_fallback: "If the button does not work, open this link:",
    footer: "This email was sent by watasu, a service for handing over files safely.",
};

pub const JA: MailText = MailText {
    code_subject: "watasu 確認コードのお知らせ",
    code_intro: "確認コードは次のとおりです:",
    code_validity: concat!(
        "有効期限は",
        crate::code_validity_minutes!(),
        "分です。コードを請求したページに入力してください。"
    ),
    code_ignore: "このコードに心当たりがない場合は、このメールを無視してください。",
    notify_subject_after: " さんからファイルが届いています",
    notify_open: "次のリンクを開いて受け取ってください:",
    notify_steps: "受け取りの際は、メールアドレス宛てに届く確認コードで本人確認を行います。ファイルは1回だけダウンロードできます。",
    notify_until: "リンクの有効期限:",
    notify_message: "メッセージ:",
    notify_button: "ファイルを受け取る",
    notify_file: "ファイル:",
    notify_files: "ファイル:",
    notify_more_files: "ほか {n} ファイル",
    notify_file_count: "ファイル {n} 個",
    receipt_subject: "{recipient} さんが {file} をダウンロードしました",
    receipt_body: "送信したファイルが受け取り先でダウンロードされました。ファイルはまもなくサーバーから削除されます。",
    receipt_recipient: "受け取った方:",
    receipt_file: "ファイル:",
    receipt_files: "ファイル（{n}個）:",
    files_count: "{n}個のファイル",
    receipt_started: "ダウンロード開始:",
    receipt_completed: "ダウンロード完了:",
    receipt_off: "このお知らせは、送信時に共有ごとにオフにできます。",
    locked_subject: "{recipient} さんへの共有が、誤ったコードの入力でロックされました",
    locked_body: "送ったファイルに誤ったコードが何度も入力されたため、あなたが操作するまでリンクはコードを受け付けません。",
    open_share: "共有を開く",
    invite_subject: "watasu への招待",
    invite_body: "watasu でファイルを送るための招待が届いています。次のリンクを開いてパスワードを設定してください:",
    invite_valid: "リンクは1回だけ、72時間有効です。",
    invite_button: "パスワードを設定する",
    link_fallback: "ボタンが使えない場合は、次のリンクを開いてください:",
    footer: "このメールは、ファイルを安全に受け渡すサービス watasu から送信されています。",
};
