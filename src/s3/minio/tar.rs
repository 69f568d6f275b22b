//! A tar reader for snowball uploads: ustar and POSIX (pax) headers, GNU long names, over any
//! `AsyncRead`, one member at a time, never holding more than a header block and a pax record
//! in memory. Python's `tarfile` (minio-py), Go's `archive/tar` (minio-go) and GNU tar write
//! what it reads.

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::{S3Error, S3Result};

const BLOCK: usize = 512;
/// Largest pax or GNU long-name record taken (names are at most 1,024 bytes as keys).
const MAX_RECORD: u64 = 64 * 1024;
/// Largest member taken: an object's largest size (a bigger one is refused before its data).
const MAX_MEMBER: u64 = crate::s3::request::MAX_PUT_SIZE;

/// What a member is.
#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else (links, devices, FIFOs): skipped.
    Other,
}

/// One member's header.
#[derive(Debug)]
pub struct Member {
    /// Its path, as the archive names it.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// What it is.
    pub kind: Kind,
}

fn malformed(why: &str) -> S3Error {
    S3Error::invalid_request(format!("The snowball archive is not a valid tar: {why}"))
}

/// A number field: octal text, or base-256 (GNU) when the high bit of the first byte is set.
fn number(field: &[u8]) -> S3Result<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        let mut n: u64 = u64::from(field[0] & 0x7f);
        for b in &field[1..] {
            n = n
                .checked_mul(256)
                .and_then(|n| n.checked_add(u64::from(*b)))
                .ok_or_else(|| malformed("a size out of range"))?;
        }
        return Ok(n);
    }
    let text: String = field
        .iter()
        .take_while(|b| **b != 0)
        .map(|b| *b as char)
        .collect();
    let text = text.trim();
    if text.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(text, 8).map_err(|_| malformed("a number field is not octal"))
}

/// A member's name: UTF-8, or refused (a lossy conversion would let two members land on one
/// key).
fn name(field: &[u8]) -> S3Result<String> {
    let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    String::from_utf8(field[..end].to_vec()).map_err(|_| malformed("a member's name is not UTF-8"))
}

/// Parses one header block: `None` for an all-zero block (the archive's end).
pub fn header(block: &[u8; BLOCK]) -> S3Result<Option<(Member, u8)>> {
    if block.iter().all(|b| *b == 0) {
        return Ok(None);
    }
    let want = number(&block[148..156])?;
    let sum: u64 = block
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u64::from(*b)
            }
        })
        .sum();
    if sum != want {
        return Err(malformed("a header checksum does not match"));
    }
    let mut path = name(&block[0..100])?;
    // POSIX ustar only: GNU's magic (`ustar  \0`) keeps times where ustar keeps the prefix.
    if &block[257..263] == b"ustar\0" {
        let prefix = name(&block[345..500])?;
        if !prefix.is_empty() {
            path = format!("{prefix}/{path}");
        }
    }
    let flag = block[156];
    let kind = match flag {
        b'0' | 0 | b'7' => Kind::File,
        b'5' => Kind::Dir,
        _ => Kind::Other,
    };
    let size = number(&block[124..136])?;
    if size > MAX_MEMBER {
        return Err(S3Error::entity_too_large()
            .with_message("A member of the snowball archive is larger than an object may be"));
    }
    Ok(Some((Member { path, size, kind }, flag)))
}

/// What a pax extended header says of the next member: its `path` and `size`.
#[derive(Debug, Default)]
pub struct Pax {
    /// `path=`.
    pub path: Option<String>,
    /// `size=` (for members over 8 GiB, which ustar cannot say).
    pub size: Option<u64>,
}

/// Parses a pax extended header's records (`<len> <key>=<value>\n`).
pub fn pax(records: &[u8]) -> S3Result<Pax> {
    let mut rest = records;
    let mut out = Pax::default();
    while !rest.is_empty() {
        let space = rest
            .iter()
            .position(|b| *b == b' ')
            .ok_or_else(|| malformed("a pax record without a length"))?;
        let len: usize = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|l| *l > space + 1 && *l <= rest.len())
            .ok_or_else(|| malformed("a pax record's length"))?;
        let record = &rest[space + 1..len];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(v) = record.strip_prefix(b"path=") {
            out.path = Some(
                String::from_utf8(v.to_vec()).map_err(|_| malformed("a path that is not UTF-8"))?,
            );
        } else if let Some(v) = record.strip_prefix(b"size=") {
            let size = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| malformed("a pax size that is not a number"))?;
            if size > MAX_MEMBER {
                return Err(S3Error::entity_too_large().with_message(
                    "A member of the snowball archive is larger than an object may be",
                ));
            }
            out.size = Some(size);
        }
        rest = &rest[len..];
    }
    Ok(out)
}

/// Reads members from `r`, counting every byte it reads (headers, skipped data and what
/// follows the archive included) against a limit: a compressed archive cannot make the server
/// decompress more than that, whatever kinds of members carry the bytes.
pub struct Reader<R> {
    r: R,
    /// Bytes of the current member's data (and padding) not yet read.
    left: u64,
    pad: u64,
    /// Whether any block was read (an empty body is no archive).
    started: bool,
    /// Bytes read so far, and the most that may be.
    total: u64,
    limit: u64,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// A reader at the archive's start that reads at most `limit` bytes.
    pub fn new(r: R, limit: u64) -> Self {
        Self {
            r,
            left: 0,
            pad: 0,
            started: false,
            total: 0,
            limit,
        }
    }

    /// One read, counted; `why` names what a failed read means.
    async fn pull(&mut self, buf: &mut [u8], why: &str) -> S3Result<usize> {
        let n = self.r.read(buf).await.map_err(|_| malformed(why))?;
        self.total += n as u64;
        if self.total > self.limit {
            return Err(S3Error::entity_too_large().with_message(
                "The snowball archive expands to more than 5 GiB of data and 1 GiB of headers",
            ));
        }
        Ok(n)
    }

    /// Fills `buf`; `Err(got)` with the bytes read when the stream ends first.
    async fn fill(
        &mut self,
        buf: &mut [u8],
        why: &str,
    ) -> S3Result<std::result::Result<(), usize>> {
        let mut got = 0;
        while got < buf.len() {
            let n = self.pull(&mut buf[got..], why).await?;
            if n == 0 {
                return Ok(Err(got));
            }
            got += n;
        }
        Ok(Ok(()))
    }

    /// Reads what follows the archive's end to its own end (a compressed stream checks its
    /// trailer there).
    pub async fn finish(&mut self) -> S3Result<()> {
        let mut buf = [0u8; 8192];
        while self.pull(&mut buf, "its stream is damaged").await? > 0 {}
        Ok(())
    }

    /// One header block; `None` at the stream's end on a block boundary.
    async fn block(&mut self) -> S3Result<Option<[u8; BLOCK]>> {
        let mut block = [0u8; BLOCK];
        match self.fill(&mut block, "it could not be read").await? {
            Ok(()) => {
                self.started = true;
                Ok(Some(block))
            }
            Err(0) if self.started => Ok(None),
            Err(0) => Err(malformed("the body is empty")),
            Err(_) => Err(malformed("it ends inside a header")),
        }
    }

    async fn skip(&mut self, mut n: u64) -> S3Result<()> {
        let mut buf = [0u8; 8192];
        while n > 0 {
            let take = n.min(buf.len() as u64) as usize;
            if self
                .fill(&mut buf[..take], "it ends inside a member")
                .await?
                .is_err()
            {
                return Err(malformed("it ends inside a member"));
            }
            n -= take as u64;
        }
        Ok(())
    }

    async fn record(&mut self, size: u64) -> S3Result<Vec<u8>> {
        if size > MAX_RECORD {
            return Err(malformed("an extended header over 64 KiB"));
        }
        let mut v = vec![0u8; size as usize];
        if self.fill(&mut v, "it ends inside a header").await?.is_err() {
            return Err(malformed("it ends inside a header"));
        }
        self.skip(padding(size)).await?;
        Ok(v)
    }

    /// The next member (its data is read with [`Reader::read`]), or `None` at the end.
    /// Sizes are at most an object's largest ([`MAX_MEMBER`]), so no sum here overflows.
    pub async fn next(&mut self) -> S3Result<Option<Member>> {
        let rest = self.left + self.pad;
        self.skip(rest).await?;
        self.left = 0;
        self.pad = 0;
        let mut long_name: Option<String> = None;
        let mut long_size: Option<u64> = None;
        loop {
            let Some(block) = self.block().await? else {
                // An archive without its two zero blocks ends where its last member does.
                return Ok(None);
            };
            let Some((mut m, flag)) = header(&block)? else {
                return Ok(None);
            };
            match flag {
                b'x' => {
                    let rec = self.record(m.size).await?;
                    let p = pax(&rec)?;
                    long_name = p.path.or(long_name);
                    long_size = p.size.or(long_size);
                }
                b'L' => {
                    let rec = self.record(m.size).await?;
                    long_name = Some(name(&rec)?);
                }
                // A global pax header, GNU volume and other meta entries: nothing to keep.
                b'g' | b'V' | b'K' => {
                    let size = m.size;
                    self.skip(size + padding(size)).await?;
                }
                _ => {
                    if let Some(n) = long_name.take() {
                        m.path = n;
                    }
                    if let Some(s) = long_size.take() {
                        m.size = s;
                    }
                    // Whatever its kind, a member's data is read or skipped before the next
                    // header (a directory or link with data keeps the archive in step).
                    self.left = m.size;
                    self.pad = padding(m.size);
                    if m.kind != Kind::File {
                        m.size = 0;
                    }
                    return Ok(Some(m));
                }
            }
        }
    }

    /// Reads the current member's data into `buf`; 0 at its end. Only a file's data is read
    /// (the caller reads nothing of other kinds, which [`Reader::next`] skips).
    pub async fn read(&mut self, buf: &mut [u8]) -> S3Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let take = (buf.len() as u64).min(self.left) as usize;
        let n = self.pull(&mut buf[..take], "it could not be read").await?;
        if n == 0 {
            return Err(malformed("it ends inside a member"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn padding(size: u64) -> u64 {
    (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(name: &str, size: u64, flag: u8) -> [u8; BLOCK] {
        let mut b = [0u8; BLOCK];
        b[..name.len()].copy_from_slice(name.as_bytes());
        b[100..107].copy_from_slice(b"0000644");
        let s = format!("{size:011o}");
        b[124..135].copy_from_slice(s.as_bytes());
        b[156] = flag;
        b[257..263].copy_from_slice(b"ustar\0");
        b[263..265].copy_from_slice(b"00");
        b[148..156].copy_from_slice(b"        ");
        let sum: u64 = b.iter().map(|x| u64::from(*x)).sum();
        b[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        b
    }

    #[tokio::test]
    async fn members_pax_names_and_the_end() {
        let mut tar = Vec::new();
        tar.extend_from_slice(&block("a.txt", 5, b'0'));
        tar.extend_from_slice(b"hello");
        tar.extend_from_slice(&[0u8; 507]);
        let long = "d/".to_owned() + &"x".repeat(150);
        let rec = format!(" path={long}\n");
        let rec = format!("{}{rec}", rec.len() + 3);
        tar.extend_from_slice(&block("PaxHeader", rec.len() as u64, b'x'));
        tar.extend_from_slice(rec.as_bytes());
        tar.extend_from_slice(&vec![0u8; padding(rec.len() as u64) as usize]);
        tar.extend_from_slice(&block("short", 0, b'0'));
        tar.extend_from_slice(&block("dir/", 0, b'5'));
        tar.extend_from_slice(&[0u8; 1024]);
        let mut r = Reader::new(&tar[..], u64::MAX);
        let m = r.next().await.unwrap().unwrap();
        assert_eq!((m.path.as_str(), m.size, m.kind), ("a.txt", 5, Kind::File));
        let mut buf = [0u8; 3];
        let mut got = Vec::new();
        loop {
            let n = r.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, b"hello");
        assert_eq!(r.next().await.unwrap().unwrap().path, long);
        let d = r.next().await.unwrap().unwrap();
        assert_eq!((d.path.as_str(), d.kind), ("dir/", Kind::Dir));
        assert!(r.next().await.unwrap().is_none());
        // A flipped byte fails the checksum; an empty body, a partial block and a size past
        // an object's largest are refused too.
        let mut bad = tar.clone();
        bad[10] = b'!';
        assert!(Reader::new(&bad[..], u64::MAX).next().await.is_err());
        assert!(Reader::new(&b""[..], u64::MAX).next().await.is_err());
        assert!(Reader::new(&tar[..88], u64::MAX).next().await.is_err());
        // A base-256 size of 8 GiB (past an object's largest), and one past u64 (malformed).
        let mut huge = block("big", 0, b'0');
        huge[124..136].copy_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0]);
        huge[148..156].copy_from_slice(b"        ");
        let sum: u64 = huge.iter().map(|x| u64::from(*x)).sum();
        huge[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        let e = Reader::new(&huge[..], u64::MAX).next().await.unwrap_err();
        assert_eq!(e.code, "EntityTooLarge");
        huge[125..136].copy_from_slice(&[0xff; 11]);
        huge[148..156].copy_from_slice(b"        ");
        let sum: u64 = huge.iter().map(|x| u64::from(*x)).sum();
        huge[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        let e = Reader::new(&huge[..], u64::MAX).next().await.unwrap_err();
        assert_eq!(e.code, "InvalidRequest");
        // Every byte read counts against the limit, skipped ones included.
        let mut r = Reader::new(&tar[..], 600);
        assert!(r.next().await.is_ok());
        let e = r.next().await.unwrap_err();
        assert_eq!(e.code, "EntityTooLarge");
    }
}
