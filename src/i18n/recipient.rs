//! The words of the recipient's pages: the link's landing page, the code step, the wait when code
//! requests are used up, the download, and the pages that end the flow ("already downloaded").
//! `{time}`, `{minutes}` and `{n}` are filled in by the page; `|` marks where a Japanese line may
//! break (the macro in `templates/recipient/_phrases.html`), and is never shown.

/// The recipient's words.
pub struct RecipientText {
    pub landing_title: &'static str,
    pub sent_by_before: &'static str,
    pub sent_by_after: &'static str,
    /// `|` marks where a Japanese line may break (`templates/recipient/_phrases.html`).
    pub landing_explain: &'static str,
    pub email_label: &'static str,
    pub email_hint: &'static str,
    pub email_submit: &'static str,
    pub code_sent_title: &'static str,
    pub code_sent_body: &'static str,
    pub spam_hint: &'static str,
    pub code_label: &'static str,
    pub code_submit: &'static str,
    pub code_wrong: &'static str,
    pub code_malformed: &'static str,
    /// `|` marks where a Japanese line may break (`templates/recipient/_phrases.html`).
    pub code_dead: &'static str,
    /// The code's time ran out (it was not wrong): a new one is what helps.
    pub code_expired: &'static str,
    pub resend_code: &'static str,
    pub other_address: &'static str,
    pub download_title: &'static str,
    pub file_details: &'static str,
    pub file_name_label: &'static str,
    pub file_size_label: &'static str,
    pub file_sha256_label: &'static str,
    pub message_label: &'static str,
    pub expires_label: &'static str,
    /// `|` marks where a Japanese line may break (`templates/recipient/_phrases.html`).
    pub download_once_warning: &'static str,
    pub download_button: &'static str,
    pub download_started: &'static str,
    /// Before the typed address (which goes on a line of its own).
    pub code_sent_to: &'static str,
    /// After it: the code only went there if it is the registered address.
    pub code_sent_if: &'static str,
    /// "{time}": when the new code was asked for.
    pub code_resent: &'static str,
    /// "{time}": when the same code was sent again (a time of day).
    pub code_repeated: &'static str,
    /// "{time}": until when the next code request is the last one (a time of day).
    pub last_request: &'static str,
    /// The step that replaces the forms while code requests are used up.
    pub blocked_title: &'static str,
    /// "{time}": a time of day with its zone; "{minutes}": the same wait in whole minutes.
    pub blocked_until: &'static str,
    /// Around the sender's name: whom to ask when no mail comes.
    pub blocked_sender_before: &'static str,
    pub blocked_sender_after: &'static str,
    pub reload: &'static str,
    /// "{n}" is 1: the next wrong code locks the link.
    pub lock_warning_one: &'static str,
    /// "{n}" is 2 or more.
    pub lock_warning_many: &'static str,
    /// On the email step, before any code: one download, on the device that keeps the file.
    pub once_before: &'static str,
    /// Next to the download button, for browsers without JavaScript too.
    pub after_press: &'static str,
    /// The 410 page's heading.
    pub downloaded_title: &'static str,
    /// The 410 page for the browser that downloaded: "{time}" is when.
    pub downloaded_here: &'static str,
    /// The 410 page for anyone else holding the link.
    pub downloaded_elsewhere: &'static str,
    pub back_to_link: &'static str,
    /// The end pages' mailto button: "{sender}" is the sender's name.
    pub write_to: &'static str,
    /// The words of a handover of several files where they differ from one file's; "{n}" is
    /// how many files.
    pub many: ManyFilesText,
    /// The words of a handover of a secret note.
    pub note: NoteText,
}

/// The recipient's words for a secret note. `|` marks where a Japanese line may break.
pub struct NoteText {
    pub landing_title: &'static str,
    /// After the sender's name.
    pub sent_by_after: &'static str,
    pub once_before: &'static str,
    pub show_title: &'static str,
    /// "{minutes}": the delivery grace in whole minutes.
    pub show_warning: &'static str,
    pub show_button: &'static str,
    /// The page that shows the note.
    pub note_title: &'static str,
    pub note_label: &'static str,
    /// "{time}": when the grace ends and the note with it.
    pub keep_it: &'static str,
    /// The page for the browser that opened the note, coming back to the link.
    pub read_title: &'static str,
    /// "{time}": when it was shown; "{until}": when the grace ends.
    pub read_here: &'static str,
    /// After the grace: the note can no longer be shown.
    pub read_gone: &'static str,
    pub show_again: &'static str,
}

/// The recipient's words for a handover of several files.
pub struct ManyFilesText {
    pub landing_title: &'static str,
    /// After the sender's name: how many files (never their names, before the code).
    pub sent_by_after: &'static str,
    /// `|` marks where a Japanese line may break (`templates/recipient/_phrases.html`).
    pub once_before: &'static str,
    pub download_title: &'static str,
    /// `|` marks where a Japanese line may break.
    pub download_once_warning: &'static str,
    /// The button for the ZIP archive of every file.
    pub download_all: &'static str,
    /// The list of files, each with its own button.
    pub files_heading: &'static str,
    /// Each file's button; its name describes it.
    pub download_one: &'static str,
    /// `|` marks where a Japanese line may break.
    pub after_press: &'static str,
    pub download_started: &'static str,
    /// The "already downloaded" page of the browser that downloaded, during the grace: "{time}"
    /// is when; the files follow.
    pub downloaded_here: &'static str,
    pub still_fetchable: &'static str,
}

pub const EN: RecipientText = RecipientText {
    landing_title: "A file is waiting for you",
    sent_by_before: "",
    sent_by_after: " has sent you a file.",
    landing_explain: concat!(
        "To keep it safe, we first confirm that this link reached the right person: we send a ",
        crate::code_length!(),
        "-digit code to the email address the file was sent to."
    ),
    email_label: "Your email address",
    email_hint: "The address this link was sent to.",
    email_submit: "Send me a code",
    code_sent_title: "Check your email",
    code_sent_body: concat!(
        "If this is the address the file was sent to, a ",
        crate::code_length!(),
        "-digit code is on its way. It is valid for ",
        crate::code_validity_minutes!(),
        " minutes."
    ),
    spam_hint: "No mail after a few minutes? Look in your spam or junk mail folder.",
    code_label: concat!(crate::code_length!(), "-digit code"),
    code_submit: "Confirm",
    code_wrong: "That code is not right. Tries left:",
    code_malformed: concat!("Enter the ", crate::code_length!(), " digits from the email."),
    code_dead: "This code no longer works (it expired, was already used, or was entered wrongly too often). Send yourself a new code.",
    code_expired: "This code has expired: codes work only for a short time. Send yourself a new code.",
    resend_code: "Send a new code",
    other_address: "Use a different email address",
    download_title: "Your file is ready",
    file_details: "File details",
    file_name_label: "File name",
    file_size_label: "Size",
    file_sha256_label: "SHA-256 (to check the file is intact)",
    message_label: "Message from the sender",
    expires_label: "Available until",
    download_once_warning: "You can download this file only once. Afterwards the link stops working and the file is deleted from the server.",
    download_button: "Download the file",
    download_started: "Your download has started. Look in your Downloads folder (on an iPhone: the Files app). You do not need this page again.",
    code_sent_to: concat!("We sent a ", crate::code_length!(), "-digit code to the address you entered:"),
    code_sent_if: concat!(
        "if it is the address this file was sent to. The code is valid for ",
        crate::code_validity_minutes!(),
        " minutes."
    ),
    code_resent: "A new code was sent at {time}. Earlier codes no longer work.",
    code_repeated: "The same code was sent again at {time}. It works until it expires as before.",
    last_request: "Your next code request is the last one until {time}: check the address first.",
    blocked_title: "Please wait before asking for a new code",
    blocked_until: "For safety, codes can be asked for only a few times in a row. You can ask for a new code at {time} (in {minutes} min).",
    blocked_sender_before: "If no mail arrives, ask ",
    blocked_sender_after: " which address the file was sent to.",
    reload: "Reload this page",
    lock_warning_one: "Careful: one more wrong code locks this link. After that, only the person who sent it can open it again.",
    lock_warning_many: "Careful: {n} more wrong codes lock this link. After that, only the person who sent it can open it again.",
    once_before: "This file can be downloaded only once. Open this link on the device where you want to keep the file.",
    after_press: "After you press the button, the file is saved in your Downloads folder (on an iPhone: the Files app).",
    downloaded_title: "This file has already been downloaded",
    downloaded_here: "This browser downloaded it on {time}. Look in your Downloads folder (on an iPhone: the Files app). If you need it again, ask the person who sent it to share it again.",
    downloaded_elsewhere: "Each file can be downloaded only once. If you did not download it yourself, or you need it again, contact the person who sent it.",
    back_to_link: "Back to the link",
    write_to: "Write to {sender}",
    many: ManyFilesText {
        landing_title: "Files are waiting for you",
        sent_by_after: " has sent you {n} files.",
        once_before: "These files can be downloaded only once. Open this link on the device where you want to keep them.",
        download_title: "Your files are ready",
        download_once_warning: "You can download these files only once: the first button you press counts as the download, in this browser only. Download all of them at once, or each file in turn right away. Afterwards the link stops working and the files are deleted from the server.",
        download_all: "Download all ({n} files, ZIP)",
        files_heading: "The files",
        download_one: "Download this file",
        after_press: "After you press a button, the ZIP file or the file is saved in your Downloads folder (on an iPhone: the Files app).",
        download_started: "Your download has started. Look in your Downloads folder (on an iPhone: the Files app). Keep this page open until you have every file you need.",
        downloaded_here: "This browser started downloading these files on {time}. Look in your Downloads folder (on an iPhone: the Files app).",
        still_fetchable: "For a short while, this browser can still download any of the files again:",
    },
    note: NoteText {
        landing_title: "A secret note is waiting for you",
        sent_by_after: " has sent you a secret note.",
        once_before: "This note can be shown only once, in one browser. Open this link where you can keep it safely, for example next to your password manager.",
        show_title: "Your secret note is ready",
        show_warning: "The note is shown in this browser only, for {minutes} minutes from when it first appears. Have a safe place ready to keep it. Afterwards the link stops working and the note is destroyed on the server.",
        show_button: "Show the note",
        note_title: "Your secret note",
        note_label: "The note",
        keep_it: "Copy the note to a safe place now. This browser can show it again until {time}; then the note is destroyed on the server and cannot be shown again.",
        read_title: "This note has already been shown",
        read_here: "This browser showed the note on {time}. It can show it again until {until}.",
        read_gone: "This browser showed the note on {time}. It has been destroyed on the server and cannot be shown again. If you need it, ask the person who sent it.",
        show_again: "Show the note again",
    },
};

pub const JA: RecipientText = RecipientText {
    landing_title: "ファイルが届いています",
    sent_by_before: "",
    sent_by_after: " さんから、あなた宛てのファイルです。",
    landing_explain: concat!(
        "安全のため、|まず|正しい方に|届いたことを|確認します。|ファイルの|送り先として|登録された|メールアドレスに、|",
        crate::code_length!(),
        "桁の|確認コードを|お送りします。"
    ),
    email_label: "あなたのメールアドレス",
    email_hint: "このリンクを受け取ったメールアドレスを入力してください。",
    email_submit: "確認コードを送る",
    code_sent_title: "メールをご確認ください",
    code_sent_body: concat!(
        "入力されたアドレスがファイルの送り先と同じなら、そのアドレスに",
        crate::code_length!(),
        "桁の確認コードを送りました。コードは",
        crate::code_validity_minutes!(),
        "分間有効です。"
    ),
    spam_hint: "数分たってもメールが届かない場合は、迷惑メールフォルダもご確認ください。",
    code_label: concat!(crate::code_length!(), "桁の確認コード"),
    code_submit: "確認する",
    code_wrong: "コードが違います。入力できる残り回数:",
    code_malformed: concat!("メールに書かれた", crate::code_length!(), "桁の数字を入力してください。"),
    code_dead: "このコードは|使えなくなりました|（期限切れ、|使用済み、|または|入力ミスが|多すぎます）。|新しい|コードを|送ってください。",
    code_expired: "このコードは|有効期限が|切れました。|コードは|短い時間だけ|使えます。|新しい|コードを|送ってください。",
    resend_code: "新しいコードを送る",
    other_address: "別のメールアドレスを入力する",
    download_title: "ファイルを受け取れます",
    file_details: "ファイルの詳細",
    file_name_label: "ファイル名",
    file_size_label: "サイズ",
    file_sha256_label: "SHA-256（ファイルが壊れていないかの確認用）",
    message_label: "送った方からのメッセージ",
    expires_label: "受け取り期限",
    download_once_warning: "ダウンロードできるのは|1回だけです。|ダウンロード後は|リンクが|使えなくなり、|ファイルは|サーバーから|削除されます。",
    download_button: "ファイルをダウンロード",
    download_started: "ダウンロードを開始しました。端末の「ダウンロード」フォルダ（iPhone は「ファイル」アプリ）をご確認ください。このページをもう一度使う必要はありません。",
    code_sent_to: concat!("次の|アドレスに、|", crate::code_length!(), "桁の|確認コードを|お送りしました。"),
    code_sent_if: concat!(
        "ただし、|このファイルの|送り先と|同じ|アドレスの|場合に|限ります。|コードは|",
        crate::code_validity_minutes!(),
        "分間|有効です。"
    ),
    code_resent: "{time}に|新しい|コードを|お送りしました。|それより|前の|コードは|使えません。",
    code_repeated: "{time}に|同じ|コードを|もう一度|お送りしました。|有効期限は|変わりません。",
    last_request: "次の|コードの|請求は、|{time}まで|最後の|1回です。|アドレスを|ご確認ください。",
    blocked_title: "新しい|コードの|請求は|少し|お待ちください",
    blocked_until: "安全のため、|確認コードを|続けて|請求できる|回数には|上限が|あります。|{time}|（あと{minutes}分）から、|新しい|コードを|請求できます。",
    blocked_sender_before: "メールが|届かない|場合は、|",
    blocked_sender_after: " さんに、|ファイルの|送り先の|アドレスを|ご確認ください。",
    reload: "このページを再読み込み",
    lock_warning_one: "ご注意ください。|あと1回|コードを|間違えると、|このリンクは|ロックされ、|送った方に|解除してもらうまで|使えなくなります。",
    lock_warning_many: "ご注意ください。|あと{n}回|コードを|間違えると、|このリンクは|ロックされ、|送った方に|解除してもらうまで|使えなくなります。",
    once_before: "このファイルは|1回だけ|ダウンロードできます。|ファイルを|残しておきたい|端末で、|このリンクを|開いてください。",
    after_press: "ボタンを|押すと、|ファイルは|「ダウンロード」|フォルダ|（iPhoneでは|「ファイル」|アプリ）に|保存されます。",
    downloaded_title: "このファイルは|すでに|ダウンロード|されています",
    downloaded_here: "このブラウザで|{time}に|ダウンロード済みです。|「ダウンロード」|フォルダ|（iPhoneでは|「ファイル」|アプリ）を|ご確認ください。|もう一度|必要な場合は、|送った方に|再度|共有してもらってください。",
    downloaded_elsewhere: "ファイルは|1回だけ|ダウンロードできます。|ご自身で|ダウンロードしていない場合や、|もう一度|必要な場合は、|送った方に|ご連絡ください。",
    back_to_link: "リンクのページに戻る",
    write_to: "{sender}|さんに|メールする",
    many: ManyFilesText {
        landing_title: "ファイルが届いています",
        sent_by_after: " さんから、あなた宛てに{n}個のファイルが届いています。",
        once_before: "これらの|ファイルは|1回だけ|ダウンロードできます。|ファイルを|残しておきたい|端末で、|このリンクを|開いてください。",
        download_title: "ファイルを受け取れます",
        download_once_warning: "ダウンロードできるのは|1回だけです。|最初に|押した|ボタンで|ダウンロードしたことになり、|このブラウザでだけ|続けて|受け取れます。|まとめて|ダウンロードするか、|すぐに|1つずつ|ダウンロードしてください。|その後は|リンクが|使えなくなり、|ファイルは|サーバーから|削除されます。",
        download_all: "すべてをダウンロード（{n}個、ZIP）",
        files_heading: "ファイルの一覧",
        download_one: "このファイルをダウンロード",
        after_press: "ボタンを|押すと、|ZIPファイルや|ファイルが|「ダウンロード」|フォルダ|（iPhoneでは|「ファイル」|アプリ）に|保存されます。",
        download_started: "ダウンロードを開始しました。端末の「ダウンロード」フォルダ（iPhone は「ファイル」アプリ）をご確認ください。必要なファイルをすべて受け取るまで、このページを閉じないでください。",
        downloaded_here: "このブラウザで|{time}に|ダウンロードを|始めました。|「ダウンロード」|フォルダ|（iPhoneでは|「ファイル」|アプリ）を|ご確認ください。",
        still_fetchable: "しばらくの間は、|このブラウザで|どのファイルも|もう一度|ダウンロードできます。",
    },
    note: NoteText {
        landing_title: "秘密のメモが届いています",
        sent_by_after: " さんから、あなた宛てに秘密のメモが届いています。",
        once_before: "この|メモは|1回だけ、|1つの|ブラウザでだけ|表示できます。|安全に|保管できる|端末で、|このリンクを|開いてください。",
        show_title: "秘密のメモを表示できます",
        show_warning: "メモは|このブラウザでだけ、|最初に|表示してから|{minutes}分間|表示できます。|保管する|場所を|用意してから|押してください。|その後は|リンクが|使えなくなり、|メモは|サーバーから|消去されます。",
        show_button: "メモを表示する",
        note_title: "秘密のメモ",
        note_label: "メモ",
        keep_it: "今すぐ|メモを|安全な|場所に|控えてください。|このブラウザでは|{time}まで|もう一度|表示できます。|その後|メモは|サーバーから|消去され、|二度と|表示できません。",
        read_title: "このメモは|すでに|表示されています",
        read_here: "このブラウザで|{time}に|表示しました。|{until}までは|もう一度|表示できます。",
        read_gone: "このブラウザで|{time}に|表示しました。|メモは|サーバーから|消去され、|もう|表示できません。|必要な場合は、|送った方に|お問い合わせください。",
        show_again: "メモをもう一度表示する",
    },
};
