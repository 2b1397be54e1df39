//! The words of a secret note on the sender's pages: the form's choice between files and a note
//! with the note's field and refusals, and a note's share in the list and on its page ("read"
//! where a file's says "downloaded"). The note's text itself is never on these pages.

pub struct NoteText {
    /// The form's choice: what the handover carries.
    pub kind_legend: &'static str,
    pub kind_files: &'static str,
    pub kind_note: &'static str,
    pub note_label: &'static str,
    /// "{limit}" is the note's limit in words ("4 KiB").
    pub note_hint: &'static str,
    pub note_empty: &'static str,
    /// "{limit}" as in the hint.
    pub note_too_long: &'static str,
    pub note_with_files: &'static str,
    /// What a note's share carries, where a file's shows its name (list, share and created pages).
    pub carried: &'static str,
    /// A note's share once its recipient read it, where a file's says "Downloaded".
    pub status_read: &'static str,
    /// "{time}" is when it was read.
    pub read_at: &'static str,
    /// Where a file's share page says "File".
    pub carried_label: &'static str,
    /// The created page's title for a note.
    pub created_title: &'static str,
    /// A note's timeline, where a file's says "Download started" and "Download completed".
    pub event_shown: &'static str,
    pub event_read: &'static str,
}

pub const EN: NoteText = NoteText {
    kind_legend: "What to send",
    kind_files: "Files",
    kind_note: "A secret note",
    note_label: "Secret note",
    note_hint: "At most {limit}: a password, an account number, a door code. It is shown once, after the recipient's code, and then destroyed.",
    note_empty: "Write the note to send.",
    note_too_long: "The note is longer than {limit}. Shorten it.",
    note_with_files: "A secret note is sent without files. Remove the files, or choose “Files” to send them instead.",
    carried: "A secret note",
    status_read: "Read",
    read_at: "Read {time}",
    carried_label: "Content",
    created_title: "The note is on its way",
    event_shown: "Note opened",
    event_read: "Note read",
};

pub const JA: NoteText = NoteText {
    kind_legend: "送るもの",
    kind_files: "ファイル",
    kind_note: "秘密のメモ",
    note_label: "秘密のメモ",
    note_hint: "最大 {limit}。パスワード、口座番号、暗証番号などに。受け取る方が確認コードを入力した後に一度だけ表示され、その後は消去されます。",
    note_empty: "送るメモを入力してください。",
    note_too_long: "メモが {limit} を超えています。短くしてください。",
    note_with_files: "秘密のメモはファイルなしで送ります。ファイルを外すか、「ファイル」を選んでファイルを送ってください。",
    carried: "秘密のメモ",
    status_read: "閲覧済み",
    read_at: "閲覧: {time}",
    carried_label: "内容",
    created_title: "メモを送りました",
    event_shown: "メモを開封",
    event_read: "メモを閲覧",
};
