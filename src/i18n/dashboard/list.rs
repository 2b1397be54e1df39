//! The words of the share list's table and its filter by outcome (the outcomes' own names are the
//! status words of the dashboard).

pub struct ListText {
    /// The filter's name for screen readers (a navigation landmark).
    pub filter_label: &'static str,
    pub filter_all: &'static str,
    /// The list's visible column heads on wide screens (recipient, file and sent are the
    /// dashboard's own column words).
    pub col_size: &'static str,
    pub col_outcome: &'static str,
    /// Time left while waiting, the download time once downloaded.
    pub col_time: &'static str,
    /// A filter that matches no share.
    pub filtered_empty: &'static str,
}

pub const EN: ListText = ListText {
    filter_label: "Show shares",
    filter_all: "All",
    col_size: "Size",
    col_outcome: "Outcome",
    col_time: "Time left or downloaded",
    filtered_empty: "No share has this outcome.",
};

pub const JA: ListText = ListText {
    filter_label: "表示する共有",
    filter_all: "すべて",
    col_size: "サイズ",
    col_outcome: "状況",
    col_time: "残り時間・受け取り日時",
    filtered_empty: "この状況の共有はありません。",
};
