//! The byte records of a ZIP archive (APPNOTE 6.3.10): local and central headers, the ZIP64
//! extra field and end records, and the MS-DOS date. Little-endian throughout.

use chrono::{Datelike, NaiveDateTime, Timelike};

/// A 32-bit field at this value means "see the ZIP64 record".
pub const OVERFLOW_32: u64 = 0xFFFF_FFFF;
/// A 16-bit entry count at this value means "see the ZIP64 end record".
pub const OVERFLOW_16: u64 = 0xFFFF;

/// Names are UTF-8 (bit 11, the language-encoding flag), so Japanese names open correctly.
const FLAG_UTF8: u16 = 1 << 11;
/// 2.0 reads stored entries; 4.5 is needed to read ZIP64 fields.
const VERSION_PLAIN: u16 = 20;
const VERSION_ZIP64: u16 = 45;
/// Made by Unix (high byte 3), so the external attributes below are a Unix file mode.
const MADE_BY: u16 = (3 << 8) | VERSION_ZIP64;
/// A regular file readable by everyone, writable by its owner.
const UNIX_FILE_MODE: u32 = 0o100_644;

/// What one entry's records need to know.
pub struct Record<'a> {
    pub name: &'a str,
    pub size: u64,
    pub crc32: u32,
    pub modified: NaiveDateTime,
    /// Where its local header starts in the archive.
    pub offset: u64,
}

struct Writer(Vec<u8>);

impl Writer {
    fn u16(&mut self, value: u16) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn u32(&mut self, value: u32) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn u64(&mut self, value: u64) -> &mut Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    fn bytes(&mut self, value: &[u8]) -> &mut Self {
        self.0.extend_from_slice(value);
        self
    }
}

/// The value for a 32-bit field, or the overflow marker when the value lives in the ZIP64 extra.
fn field_32(value: u64) -> u32 {
    u32::try_from(value).ok().filter(|v| u64::from(*v) < OVERFLOW_32).unwrap_or(u32::MAX)
}

fn needs_zip64(value: u64) -> bool {
    value >= OVERFLOW_32
}

/// The MS-DOS time and date (2-second resolution, years 1980–2107), clamped into that range.
fn dos_time_date(at: NaiveDateTime) -> (u16, u16) {
    let year = at.year().clamp(1980, 2107);
    if year != at.year() {
        let (month, day) = if at.year() < 1980 { (1, 1) } else { (12, 31) };
        return (0, (((year - 1980) as u16) << 9) | (month << 5) | day);
    }
    let time = ((at.hour() as u16) << 11) | ((at.minute() as u16) << 5) | (at.second() as u16 / 2);
    let date = (((year - 1980) as u16) << 9) | ((at.month() as u16) << 5) | at.day() as u16;
    (time, date)
}

/// The extended-timestamp extra field (0x5455): the modification time in UTC seconds, which
/// current tools prefer to the zone-less DOS time.
fn unix_time_extra(at: NaiveDateTime) -> Vec<u8> {
    let seconds = u32::try_from(at.and_utc().timestamp()).unwrap_or(0);
    let mut w = Writer(Vec::with_capacity(9));
    w.u16(0x5455).u16(5).bytes(&[1]).u32(seconds);
    w.0
}

/// An entry's extra fields: the ZIP64 one holding `zip64` (the values whose 32-bit slot
/// overflowed, in the order the format lists them), if any, then the UTC modification time.
fn extra_fields(zip64: &[u64], modified: NaiveDateTime) -> Vec<u8> {
    let mut extra = Writer(Vec::new());
    if !zip64.is_empty() {
        extra.u16(0x0001).u16(8 * zip64.len() as u16);
        for value in zip64 {
            extra.u64(*value);
        }
    }
    extra.bytes(&unix_time_extra(modified));
    extra.0
}

impl Writer {
    /// The fields the local and the central header share, from "version needed" to the extra
    /// fields' length.
    fn entry_fields(&mut self, entry: &Record, zip64: bool, extra: &[u8]) -> &mut Self {
        let (time, date) = dos_time_date(entry.modified);
        self.u16(if zip64 { VERSION_ZIP64 } else { VERSION_PLAIN })
            .u16(FLAG_UTF8)
            .u16(0) // stored
            .u16(time)
            .u16(date)
            .u32(entry.crc32)
            .u32(field_32(entry.size))
            .u32(field_32(entry.size))
            .u16(entry.name.len() as u16)
            .u16(extra.len() as u16)
    }
}

/// The local header in front of an entry's bytes. A ZIP64 entry carries both sizes in the extra.
pub fn local_header(entry: &Record) -> Vec<u8> {
    let zip64: &[u64] = if needs_zip64(entry.size) { &[entry.size, entry.size] } else { &[] };
    let extra = extra_fields(zip64, entry.modified);
    let mut w = Writer(Vec::with_capacity(30 + entry.name.len() + extra.len()));
    w.u32(0x0403_4b50).entry_fields(entry, !zip64.is_empty(), &extra).bytes(entry.name.as_bytes()).bytes(&extra);
    w.0
}

/// The entry's record in the central directory: its ZIP64 extra holds only the fields whose
/// 32-bit slot overflowed.
pub fn central_header(entry: &Record) -> Vec<u8> {
    let mut zip64 = Vec::new();
    if needs_zip64(entry.size) {
        zip64.extend([entry.size, entry.size]);
    }
    if needs_zip64(entry.offset) {
        zip64.push(entry.offset);
    }
    let extra = extra_fields(&zip64, entry.modified);
    let mut w = Writer(Vec::with_capacity(46 + entry.name.len() + extra.len()));
    w.u32(0x0201_4b50)
        .u16(MADE_BY)
        .entry_fields(entry, !zip64.is_empty(), &extra)
        .u16(0) // comment
        .u16(0) // disk
        .u16(0) // internal attributes
        .u32(UNIX_FILE_MODE << 16)
        .u32(field_32(entry.offset))
        .bytes(entry.name.as_bytes())
        .bytes(&extra);
    w.0
}

/// The end records: the ZIP64 end record and its locator when a count, size or offset
/// overflows, then the classic end record.
pub fn end_records(entries: u64, directory_offset: u64, directory_size: u64) -> Vec<u8> {
    let zip64 = entries >= OVERFLOW_16 || needs_zip64(directory_offset) || needs_zip64(directory_size);
    let mut w = Writer(Vec::with_capacity(98));
    if zip64 {
        let record_offset = directory_offset + directory_size;
        w.u32(0x0606_4b50)
            .u64(44)
            .u16(MADE_BY)
            .u16(VERSION_ZIP64)
            .u32(0)
            .u32(0)
            .u64(entries)
            .u64(entries)
            .u64(directory_size)
            .u64(directory_offset);
        w.u32(0x0706_4b50).u32(0).u64(record_offset).u32(1);
    }
    let count = if entries >= OVERFLOW_16 { u16::MAX } else { entries as u16 };
    w.u32(0x0605_4b50)
        .u16(0)
        .u16(0)
        .u16(count)
        .u16(count)
        .u32(field_32(directory_size))
        .u32(field_32(directory_offset))
        .u16(0);
    w.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn dos_dates_pack_fields_and_clamp_outside_their_range() {
        let (time, date) = dos_time_date(at("2026-12-03 17:45:31"));
        assert_eq!((time >> 11, (time >> 5) & 63, (time & 31) * 2), (17, 45, 30));
        assert_eq!((date >> 9, (date >> 5) & 15, date & 31), (46, 12, 3));
        assert_eq!(dos_time_date(at("1970-01-01 00:00:00")), (0, (1 << 5) | 1));
    }

    #[test]
    fn small_entries_need_no_zip64_fields() {
        let record = Record { name: "a.txt", size: 5, crc32: 1, modified: at("2026-01-01 00:00:00"), offset: 0 };
        let local = local_header(&record);
        assert_eq!(local.len(), 30 + 5 + 9);
        assert_eq!(&local[18..26], &[5, 0, 0, 0, 5, 0, 0, 0]);
        assert_eq!(central_header(&record).len(), 46 + 5 + 9);
        assert_eq!(end_records(1, 44, 60).len(), 22);
    }

    #[test]
    fn overflowing_sizes_and_offsets_move_into_the_zip64_extra() {
        let big = Record { name: "b", size: 5 << 30, crc32: 0, modified: at("2026-01-01 00:00:00"), offset: 6 << 30 };
        let local = local_header(&big);
        assert_eq!(&local[18..26], &[0xFF; 8]);
        assert_eq!(local.len(), 30 + 1 + 20 + 9);
        let central = central_header(&big);
        assert_eq!(&central[42..46], &[0xFF; 4]);
        assert_eq!(central.len(), 46 + 1 + 28 + 9);
        assert_eq!(end_records(70_000, 1, 1).len(), 56 + 20 + 22);
    }
}
