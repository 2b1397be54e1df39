//! The words of the new-share form when it stops before creating: a recipient that looks mistyped
//! is asked about, and a file over the limit gives the form back with the limit and its size.

pub struct FormChecksText {
    /// Followed by the address itself.
    pub address_question: &'static str,
    pub address_right: &'static str,
    pub address_change: &'static str,
    /// `{size}` is the file's size, `{limit}` the largest accepted.
    pub too_large: &'static str,
    /// The same when the upload was cut off before its end: the file is at least `{size}`.
    pub too_large_at_least: &'static str,
}

pub const EN: FormChecksText = FormChecksText {
    address_question: "Is this address right?",
    address_right: "Yes, send to it",
    address_change: "Change it",
    too_large: "The file is {size}, larger than the limit of {limit}. Choose a smaller file.",
    too_large_at_least: "The file is at least {size}, larger than the limit of {limit}. Choose a smaller file.",
};

pub const JA: FormChecksText = FormChecksText {
    address_question: "このアドレスで合っていますか？",
    address_right: "はい、このアドレスに送る",
    address_change: "修正する",
    too_large: "ファイルは {size} で、上限の {limit} を超えています。小さいファイルを選んでください。",
    too_large_at_least: "ファイルは {size} 以上あり、上限の {limit} を超えています。小さいファイルを選んでください。",
};
