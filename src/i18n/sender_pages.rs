//! The words the sender's pages gained with the outcome view, the confirmations and the drop zone:
//! one struct per language, reached through [`Lang::sender_pages`].

use super::Lang;

pub struct SenderPagesText {
    /// The secondary line under an outcome once the file is gone.
    pub file_deleted: &'static str,
    pub event_expired: &'static str,
    pub event_link_renewed: &'static str,
    pub timeline_empty: &'static str,
    /// Read before the count of a grouped event ("×5") by screen readers.
    pub times_label: &'static str,
    pub revoke_confirm_title: &'static str,
    pub revoke_confirm_lead: &'static str,
    pub revoke_confirm_submit: &'static str,
    pub keep_share: &'static str,
    pub revoked_notice: &'static str,
    pub unlocked_notice: &'static str,
    pub not_applicable_notice: &'static str,
    pub disable_confirm_title: &'static str,
    pub disable_confirm_lead: &'static str,
    pub disable_confirm_submit: &'static str,
    pub delete_confirm_title: &'static str,
    /// After the deletion catalogue's own hint of what a case does.
    pub delete_confirm_lead: &'static str,
    pub back_to_team: &'static str,
    pub disabled_notice: &'static str,
    pub invited_notice_before: &'static str,
    pub invited_notice_after: &'static str,
    /// The drop zone's own "choose a file", in the page's language (the native button is not).
    pub drop_choose: &'static str,
    pub drop_or: &'static str,
    pub drop_none: &'static str,
    /// After a refused form: browsers never keep a chosen file.
    pub file_choose_again: &'static str,
    /// Shown by the script before sending: "{size}" is the file's size, "{limit}" the limit.
    pub file_over_limit: &'static str,
    /// A validity the presets do not name; "{n}" is the number.
    pub duration_days: &'static str,
    pub duration_hours: &'static str,
    pub duration_minutes: &'static str,
    pub created_file: &'static str,
    pub created_recipient: &'static str,
    pub created_expires: &'static str,
    /// The created page after its link's short stay: the link lives only in the recipient's mail.
    pub created_link_gone: &'static str,
    /// "{until}" is the time the link's code mails resume.
    pub code_mails_spent: &'static str,
    pub code_mails_spent_why: &'static str,
    /// A link to the fresh-link button.
    pub code_mails_spent_action: &'static str,
}

pub const EN: SenderPagesText = SenderPagesText {
    file_deleted: "The file has been deleted from the server.",
    event_expired: "Expired without a download",
    event_link_renewed: "A new link was sent (the old one stopped working)",
    timeline_empty: "Nothing has happened yet: the recipient has not opened the link.",
    times_label: "times",
    revoke_confirm_title: "End this share now?",
    revoke_confirm_lead: "The link stops working at once and the file is deleted from the server. This cannot be undone.",
    revoke_confirm_submit: "End the share",
    keep_share: "Keep the share",
    revoked_notice: "The share has ended. The link no longer works and the file is being deleted.",
    unlocked_notice: "The share is unlocked: the recipient can ask for a code again.",
    not_applicable_notice: "Nothing changed: the share had already moved on.",
    disable_confirm_title: "Disable this account?",
    disable_confirm_lead: "They are signed out at once and can no longer sign in. Their active shares keep working until they end.",
    disable_confirm_submit: "Disable the account",
    delete_confirm_title: "Delete this member's data?",
    delete_confirm_lead: "This cannot be undone.",
    back_to_team: "Back to the team",
    disabled_notice: "The account is disabled and its sessions have ended.",
    invited_notice_before: "An invitation was sent to ",
    invited_notice_after: ".",
    drop_choose: "Choose a file",
    drop_or: "or drop it here",
    drop_none: "No file chosen",
    file_choose_again: "Please choose the file again: for your safety, browsers do not keep a chosen file when a form comes back.",
    file_over_limit: "This file ({size}) is larger than the limit of {limit}. Please choose a smaller file.",
    duration_days: "{n} days",
    duration_hours: "{n} hours",
    duration_minutes: "{n} minutes",
    created_file: "File",
    created_recipient: "Recipient",
    created_expires: "Valid until",
    created_link_gone: "The link is no longer shown here: it was only shown right after sending. The recipient has it in their email; you can send a new link from the share page.",
    code_mails_spent: "This link has used up the code emails it may send, so a recipient who asks for a code now gets none. The next one can leave at {until}.",
    code_mails_spent_why: "Anyone who has the link and the recipient's address can ask for codes, so someone else may have used them up. If the recipient is still waiting:",
    code_mails_spent_action: "send a fresh link (the old link stops working and the code emails start again).",
};

pub const JA: SenderPagesText = SenderPagesText {
    file_deleted: "ファイルはサーバーから削除済みです。",
    event_expired: "ダウンロードされないまま期限が切れました",
    event_link_renewed: "新しいリンクを送りました（前のリンクは使えなくなりました）",
    timeline_empty: "まだ何も起きていません。受け取る方はまだリンクを開いていません。",
    times_label: "回",
    revoke_confirm_title: "この共有を今すぐ終了しますか？",
    revoke_confirm_lead: "リンクはすぐに使えなくなり、ファイルはサーバーから削除されます。元に戻すことはできません。",
    revoke_confirm_submit: "共有を終了する",
    keep_share: "終了しない",
    revoked_notice: "共有を終了しました。リンクは使えなくなり、ファイルを削除しています。",
    unlocked_notice: "ロックを解除しました。受け取る方はもう一度コードを受け取れます。",
    not_applicable_notice: "変更はありません。共有の状態がすでに変わっていました。",
    disable_confirm_title: "このアカウントを無効にしますか？",
    disable_confirm_lead: "すぐにログアウトされ、以後ログインできなくなります。受け取り待ちの共有は終了するまで使えます。",
    disable_confirm_submit: "アカウントを無効にする",
    delete_confirm_title: "このメンバーのデータを削除しますか？",
    delete_confirm_lead: "元に戻すことはできません。",
    back_to_team: "チームに戻る",
    disabled_notice: "アカウントを無効にし、ログイン中のセッションを終了しました。",
    invited_notice_before: "",
    invited_notice_after: " に招待を送りました。",
    drop_choose: "ファイルを選ぶ",
    drop_or: "またはここにドロップ",
    drop_none: "ファイルが選ばれていません",
    file_choose_again: "ファイルをもう一度選んでください。安全のため、ブラウザーは選んだファイルを保持しません。",
    file_over_limit: "このファイル（{size}）は上限の {limit} を超えています。もっと小さいファイルを選んでください。",
    duration_days: "{n}日",
    duration_hours: "{n}時間",
    duration_minutes: "{n}分",
    created_file: "ファイル",
    created_recipient: "受け取る方",
    created_expires: "受け取り期限",
    created_link_gone: "リンクはもう表示されません（表示されるのは送信の直後だけです）。受け取る方にはメールで届いています。共有のページから新しいリンクを送ることもできます。",
    code_mails_spent: "このリンクで送れる確認コードのメールの上限に達したため、いまコードを求めても届きません。次に送れるのは {until} 以降です。",
    code_mails_spent_why: "リンクと受け取る方のメールアドレスを知っている人なら誰でもコードを求められるため、別の人が上限まで使った可能性があります。受け取る方がまだ待っている場合は:",
    code_mails_spent_action: "新しいリンクを送ってください（古いリンクは使えなくなり、コードのメールもまた送れるようになります）。",
};

impl Lang {
    /// The sender pages' words in this language.
    pub fn sender_pages(self) -> &'static SenderPagesText {
        match self {
            Lang::Ja => &JA,
            Lang::En => &EN,
        }
    }
}
