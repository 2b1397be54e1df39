//! The words of the error pages: each status's title and explanation, the recipient's refusals,
//! and the ways back.

/// Title and explanation of one error page: what happened and what the person can do next.
pub struct ErrorText {
    pub title: &'static str,
    pub body: &'static str,
}

/// The error pages' words.
pub struct ErrorsText {
    pub request_id: &'static str,
    pub back_home: &'static str,
    pub bad_request: ErrorText,
    pub forbidden: ErrorText,
    pub not_found: ErrorText,
    pub method_not_allowed: ErrorText,
    pub gone: ErrorText,
    pub too_large: ErrorText,
    pub too_many: ErrorText,
    /// The 429 page's wait when the refusal says how long: "{n}" is whole minutes (one or more).
    pub too_many_wait_minute: &'static str,
    pub too_many_wait_minutes: &'static str,
    /// The same wait as a time of day: "{time}" is the clock time with its zone.
    pub too_many_until: &'static str,
    pub internal: ErrorText,
    pub unavailable: ErrorText,
    pub storage_full: ErrorText,
    /// The database refused a write for lack of space: nothing was lost or changed.
    pub database_full: ErrorText,
    /// The account's authenticator app was sealed with a secret key since replaced.
    pub factor_unreadable: ErrorText,
    /// A request (an upload) cut because the server is restarting.
    pub restarting: ErrorText,
    pub share_not_available: ErrorText,
    pub share_already_downloaded: ErrorText,
    pub share_locked: ErrorText,
    pub verify_first: ErrorText,
    /// A share whose files the virus scan has not released (yet).
    pub being_checked: ErrorText,
    /// A stored file that did not pass its integrity check: nothing of it was sent.
    pub file_damaged: ErrorText,
    /// A secret note this server cannot open now (its secret key is not the one it was sealed
    /// under): nothing was used up.
    pub note_unreadable: ErrorText,
    /// A recipient's link form whose token no longer works (the page was open too long).
    pub link_form_stale: ErrorText,
    /// A recipient's link form posted without any cookie: the browser refuses them.
    pub link_form_needs_cookies: ErrorText,
    /// The button of those two pages: loads the link's page afresh.
    pub reopen_link: &'static str,
    /// An error page's link back to the page the person was on.
    pub back: &'static str,
    /// An error page's link to the dashboard.
    pub back_dashboard: &'static str,
}

pub const EN: ErrorsText = ErrorsText {
    request_id: "Reference for support",
    back_home: "Back to the start page",
    bad_request: ErrorText {
        title: "This request could not be understood",
        body: "Something in what was sent is not valid. Go back, check what you entered, and try again.",
    },
    forbidden: ErrorText {
        title: "This action was refused",
        body: "The form may be too old or was sent from another site. Reload the page and try again.",
    },
    not_found: ErrorText {
        title: "This page is not available",
        body: "The address may be mistyped, or the page no longer exists. Check the link you were given.",
    },
    method_not_allowed: ErrorText {
        title: "This page cannot be used that way",
        body: "Open the page through its link or button instead.",
    },
    gone: ErrorText {
        title: "This is no longer available",
        body: "It has already been used or has ended. Ask the person who sent it to share it again.",
    },
    too_large: ErrorText {
        title: "What was sent is too large",
        body: "Choose a smaller file, or shorten what you typed, and try again.",
    },
    too_many: ErrorText { title: "Too many attempts", body: "Please wait a little, then try again." },
    too_many_wait_minute: "Please wait a minute, then try again.",
    too_many_wait_minutes: "Please wait {n} minutes, then try again.",
    too_many_until: "You can try again from {time}.",
    internal: ErrorText {
        title: "Something went wrong on our side",
        body: "Nothing you did caused this. Please try again in a moment. If it keeps happening, tell the sender the reference below.",
    },
    unavailable: ErrorText {
        title: "The service is briefly unavailable",
        body: "Please try again in a minute. Nothing has been lost.",
    },
    storage_full: ErrorText {
        title: "The server's storage is full",
        body: "Your file was not kept. Please try again later, or tell the person who runs this service.",
    },
    database_full: ErrorText {
        title: "The server's storage is full",
        body: "Nothing was lost, and nothing was changed. Please try again later, or tell the person who runs this service.",
    },
    factor_unreadable: ErrorText {
        title: "Your authenticator app cannot be checked",
        body: "This server's secret key was replaced, so it can no longer read your app's key. Ask your admin to reset your second factor, then set up the app again.",
    },
    restarting: ErrorText {
        title: "The server is restarting",
        body: "Your file did not finish arriving before the restart, and nothing of it was kept. Please wait a minute, then send it again.",
    },
    share_not_available: ErrorText {
        title: "This link is not available",
        body: "The link may be mistyped, may have expired, or the sender may have ended it. Ask the person who sent it for a new link.",
    },
    share_already_downloaded: ErrorText {
        title: "This file has already been downloaded",
        body: "Each file can be downloaded only once. If you need it again, ask the sender to share it again.",
    },
    share_locked: ErrorText {
        title: "This share is locked",
        body: "Too many wrong codes were entered, so it no longer accepts codes. Ask the person who sent it to unlock it or to send a new link.",
    },
    verify_first: ErrorText {
        title: "Please confirm your email address first",
        body: "For safety, the download starts only after you enter the code sent to your email address. Open the link again and follow the steps.",
    },
    file_damaged: ErrorText {
        title: "This file is damaged",
        body: "The stored copy of this file did not pass its integrity check, so none of it was sent. Ask the sender to send it again.",
    },
    note_unreadable: ErrorText {
        title: "The note cannot be opened right now",
        body: "The server cannot read this note at the moment. Nothing was used up: your link still works. Please try again later, or tell the person who sent it.",
    },
    being_checked: ErrorText {
        title: "The files are being checked",
        body: "The files are being checked for viruses before they can be downloaded. This usually takes a few minutes: please open the link again later.",
    },
    link_form_stale: ErrorText {
        title: "Please open the link page again",
        body: "This page was open for a long time, so its form no longer works. Nothing was sent. Open the link page again and continue from there.",
    },
    link_form_needs_cookies: ErrorText {
        title: "This page needs cookies",
        body: "Your browser did not send the cookie this page uses to remember your steps, so nothing was sent. If your browser blocks cookies, allow them for this site, then open the link page again.",
    },
    reopen_link: "Open the link page again",
    back: "Go back",
    back_dashboard: "Back to Files you sent",
};

pub const JA: ErrorsText = ErrorsText {
    request_id: "お問い合わせ用の番号",
    back_home: "トップページへ戻る",
    bad_request: ErrorText {
        title: "リクエストの内容を読み取れませんでした",
        body: "送信された内容に正しくない部分があります。前の画面に戻り、入力内容を確かめてからもう一度お試しください。",
    },
    forbidden: ErrorText {
        title: "この操作は受け付けられませんでした",
        body: "フォームの有効期限が切れたか、別のサイトから送信された可能性があります。ページを再読み込みしてから、もう一度お試しください。",
    },
    not_found: ErrorText {
        title: "このページは利用できません",
        body: "アドレスが間違っているか、ページがすでに存在しません。受け取ったリンクをご確認ください。",
    },
    method_not_allowed: ErrorText {
        title: "このページはその方法では使えません",
        body: "リンクやボタンからページを開いてください。",
    },
    gone: ErrorText {
        title: "これはもう利用できません",
        body: "すでに使用されたか、終了しています。送った方に、もう一度共有してもらうようお伝えください。",
    },
    too_large: ErrorText {
        title: "送信された内容が大きすぎます",
        body: "より小さいファイルを選ぶか、入力内容を短くしてから、もう一度お試しください。",
    },
    too_many: ErrorText {
        title: "試行回数が多すぎます", body: "少し時間をおいてから、もう一度お試しください。"
    },
    too_many_wait_minute: "1分ほど待ってから、もう一度お試しください。",
    too_many_wait_minutes: "{n}分ほど待ってから、もう一度お試しください。",
    too_many_until: "{time}から、もう一度お試しいただけます。",
    internal: ErrorText {
        title: "サーバー側で問題が発生しました",
        body: "お客様の操作が原因ではありません。少し時間をおいてからお試しください。繰り返し起きる場合は、下の番号を送った方にお伝えください。",
    },
    unavailable: ErrorText {
        title: "ただいま一時的に利用できません",
        body: "1分ほどしてからもう一度お試しください。データは失われていません。",
    },
    storage_full: ErrorText {
        title: "サーバーの保存領域がいっぱいです",
        body: "このファイルは保存されていません。しばらくしてからもう一度お試しいただくか、管理者にお問い合わせください。",
    },
    database_full: ErrorText {
        title: "サーバーの保存領域がいっぱいです",
        body: "失われたものはなく、何も変更されていません。しばらくしてからもう一度お試しいただくか、管理者にお問い合わせください。",
    },
    factor_unreadable: ErrorText {
        title: "認証アプリを確認できません",
        body: "このサーバーの秘密鍵が置き換えられたため、認証アプリの鍵を読み取れなくなりました。管理者に2段階認証のリセットを依頼し、アプリを設定し直してください。",
    },
    restarting: ErrorText {
        title: "サーバーを再起動しています",
        body: "再起動までにファイルを受け取り終えられなかったため、受け取った分は保存していません。1分ほど待ってから、もう一度送ってください。",
    },
    share_not_available: ErrorText {
        title: "このリンクは利用できません",
        body: "リンクが間違っているか、有効期限が切れたか、送った方が共有を終了した可能性があります。送った方に新しいリンクを依頼してください。",
    },
    share_already_downloaded: ErrorText {
        title: "このファイルはすでにダウンロードされています",
        body: "ファイルは1回だけダウンロードできます。もう一度必要な場合は、送った方に再度共有してもらってください。",
    },
    share_locked: ErrorText {
        title: "この共有はロックされています",
        body: "間違ったコードが何度も入力されたため、コードを受け付けなくなりました。送った方に、ロックの解除か新しいリンクの送付を依頼してください。",
    },
    verify_first: ErrorText {
        title: "先にメールアドレスの確認をお願いします",
        body: "安全のため、メールで届いたコードを入力してからダウンロードできます。リンクをもう一度開き、手順に沿って進めてください。",
    },
    file_damaged: ErrorText {
        title: "このファイルは破損しています",
        body: "保存されているファイルが完全性の検査に合格しなかったため、何も送信していません。送った方にもう一度送ってもらってください。",
    },
    note_unreadable: ErrorText {
        title: "今はメモを開けません",
        body: "サーバーが今このメモを読み取れません。何も使われていないので、リンクはそのまま使えます。しばらくしてからもう一度お試しいただくか、送った方にお知らせください。",
    },
    being_checked: ErrorText {
        title: "ファイルを確認しています",
        body: "ダウンロードできるようになる前に、ファイルのウイルス検査をしています。通常は数分で終わりますので、しばらくしてからリンクをもう一度開いてください。",
    },
    link_form_stale: ErrorText {
        title: "リンクのページを開き直してください",
        body: "ページを長い時間開いていたため、フォームが使えなくなりました。何も送信されていません。リンクのページを開き直して、続きから進めてください。",
    },
    link_form_needs_cookies: ErrorText {
        title: "このページには Cookie が必要です",
        body: "手順を覚えておくための Cookie がブラウザから送られなかったため、何も送信されていません。Cookie をブロックしている場合は、このサイトで許可してから、リンクのページを開き直してください。",
    },
    reopen_link: "リンクのページを開き直す",
    back: "前のページに戻る",
    back_dashboard: "送信したファイルの一覧に戻る",
};
