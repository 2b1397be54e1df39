//! The words of a handover of several files or several recipients on the sender's pages: the
//! form's limits and refusals, the created page's links, the list's "more files" and the share
//! page's handover with its other recipients.

pub struct HandoverText {
    pub recipients_label: &'static str,
    /// "{max}" is the most addresses one share may name.
    pub recipients_hint: &'static str,
    /// "{address}" is the typed text that is not an address.
    pub recipient_invalid: &'static str,
    /// "{max}" is the most addresses; "{count}" how many were typed.
    pub too_many_recipients: &'static str,
    /// Before the addresses that look mistyped, when there are several.
    pub addresses_question: &'static str,
    pub files_label: &'static str,
    /// "{files}" is the most files, "{size}" the largest size of all of them together.
    pub files_hint: &'static str,
    /// "{max}" is the most files; "{count}" how many were sent.
    pub too_many_files: &'static str,
    /// "{size}" is the size of the files together, "{limit}" the limit.
    pub files_too_large: &'static str,
    /// Above the uploads a form that came back keeps (each with a box to leave it out).
    pub kept_uploads: &'static str,
    /// The created page: each recipient with their own link.
    pub created_links_lead: &'static str,
    /// "{n}" is how many more files a share holds than the one named ("+ 2 more files").
    pub more_files: &'static str,
    pub more_file: &'static str,
    /// The share page: the handover's files, and the other recipients of the same files.
    pub handover_files: &'static str,
    pub other_recipients: &'static str,
    pub end_handover: &'static str,
    pub end_handover_hint: &'static str,
    pub handover_ended: &'static str,
    /// The uploader: a chosen file's button to leave it out ("{name}" is the file's name, for
    /// screen readers), and several files chosen ("{n}" files, "{size}" together).
    pub remove_file: &'static str,
    pub remove_file_named: &'static str,
    pub files_chosen: &'static str,
    /// The list of chosen files, for screen readers.
    pub chosen_files_label: &'static str,
}

pub const EN: HandoverText = HandoverText {
    recipients_label: "Recipients' email addresses",
    recipients_hint: "Separate several addresses with commas (up to {max}). Each gets a link and a code of their own.",
    recipient_invalid: "“{address}” is not an email address. Correct or remove it.",
    too_many_recipients: "You named {count} addresses; a share may name at most {max}.",
    addresses_question: "Are these addresses right?",
    files_label: "Files",
    files_hint: "Up to {files} files, {size} in all.",
    too_many_files: "You chose {count} files; a share may hold at most {max}.",
    files_too_large: "The files are {size} together, more than the limit of {limit}. Leave some out.",
    kept_uploads: "Already uploaded (untick a file to leave it out):",
    created_links_lead: "Each recipient has a link of their own: it only works with a code sent to their address.",
    more_files: "+ {n} more files",
    more_file: "+ 1 more file",
    handover_files: "Files",
    other_recipients: "Sent with the same files to",
    end_handover: "End the whole handover",
    end_handover_hint: "Ends the share of every recipient who has not downloaded yet.",
    handover_ended: "Every open share of this handover was ended.",
    remove_file: "Remove",
    remove_file_named: "Remove {name}",
    files_chosen: "{n} files ({size})",
    chosen_files_label: "Chosen files",
};

pub const JA: HandoverText = HandoverText {
    recipients_label: "受け取る方のメールアドレス",
    recipients_hint: "複数のアドレスはカンマ（,）で区切ってください（最大 {max} 件）。それぞれに専用のリンクと確認コードが届きます。",
    recipient_invalid: "「{address}」はメールアドレスではありません。直すか削除してください。",
    too_many_recipients: "{count} 件のアドレスが入力されました。1 回に送れるのは最大 {max} 件です。",
    addresses_question: "これらのアドレスで合っていますか？",
    files_label: "ファイル",
    files_hint: "最大 {files} ファイル、合計 {size} まで。",
    too_many_files: "{count} 個のファイルが選ばれました。1 回に送れるのは最大 {max} 個です。",
    files_too_large: "ファイルの合計は {size} で、上限の {limit} を超えています。いくつか外してください。",
    kept_uploads: "アップロード済み（外すファイルはチェックを外してください）：",
    created_links_lead: "受け取る方ごとに専用のリンクがあります。各アドレスに届く確認コードがなければ開けません。",
    more_files: "ほか {n} ファイル",
    more_file: "ほか 1 ファイル",
    handover_files: "ファイル",
    other_recipients: "同じファイルを送った相手",
    end_handover: "この送付をすべて終了",
    end_handover_hint: "まだダウンロードしていないすべての受け取る方の共有を終了します。",
    handover_ended: "この送付の未完了の共有をすべて終了しました。",
    remove_file: "外す",
    remove_file_named: "{name} を外す",
    files_chosen: "{n} ファイル（{size}）",
    chosen_files_label: "選んだファイル",
};
