//! Reads: opening an object for a ranged, chunk-by-chunk download under a reader lease.

use super::*;

impl ObjectStore {
    /// Streams bytes `[start, end)` of an object under a reader lease, renewed while the
    /// stream lives and released when it is dropped. `FileNotFound` when the revision was
    /// replaced or deleted before the lease was taken (the caller looks the key up again).
    pub async fn open_read(
        &self,
        bucket: &str,
        info: &ObjectInfo,
        start: u64,
        end: u64,
    ) -> Result<ByteStream> {
        self.open_read_with(bucket, info, start, end, None).await
    }

    /// [`ObjectStore::open_read`] with the object's chunk 0 when the lookup read it (see
    /// [`ObjectStore::lookup_to_read`]): a read within it sends no query.
    pub async fn open_read_with(
        &self,
        bucket: &str,
        info: &ObjectInfo,
        start: u64,
        end: u64,
        chunk0: Option<FirstChunk>,
    ) -> Result<ByteStream> {
        crate::failpoint::hit("read.open", bucket).await;
        if let Some(p) = info.file.content.as_ref().and_then(Pointer::of) {
            return Box::pin(self.contents(bucket).read(&p, info.file.length, start, end)).await;
        }
        let fs = self.gridfs(bucket);
        let sealing = info.sealing()?;
        if start == end {
            return fs.download_sealed(&info.file, sealing.as_ref(), 0, start, end);
        }
        // A small read (or short range) is read whole in one round trip when the download
        // budget has room for it, and holds its share until the client has taken the bytes;
        // without room it streams chunk by chunk below like any large read, so that many
        // small reads together never hold more than the budget.
        let share = if end - start <= SMALL_READ {
            super::super::gridfs::budget::try_download_share((end - start) as usize)
        } else {
            None
        };
        if let Some(share) = share {
            // One round trip reads it all: no reader lease is needed, because a reclaim that
            // overlaps the read shows as a missing chunk, and the caller looks the key up again.
            return match fs
                .read_sealed_with(
                    &info.file,
                    sealing.as_ref(),
                    start,
                    end,
                    chunk0.map(|c| c.0),
                )
                .await
            {
                Ok(b) => {
                    crate::failpoint::hit("read.small", bucket).await;
                    // The share goes back when the consumer asks for what follows the bytes,
                    // that is once it has taken them.
                    let rest = futures::stream::once(async move {
                        drop(share);
                        None
                    })
                    .filter_map(futures::future::ready);
                    Ok(Box::pin(
                        futures::stream::once(async move { Ok(b) }).chain(rest),
                    ))
                }
                Err(GridFsError::ChunkMissing(n)) => {
                    // Reclaimed meanwhile (look again), converted to a content meanwhile (read
                    // that), or a file that lost a chunk (corrupt).
                    match self.converted(bucket, info).await? {
                        Now::Gone => Err(GridFsError::FileNotFound),
                        Now::Content(p) => {
                            Box::pin(self.contents(bucket).read(&p, info.file.length, start, end))
                                .await
                        }
                        Now::Same => Err(GridFsError::ChunkMissing(n)),
                    }
                }
                Err(e) => Err(e),
            };
        }
        let lease = self
            .meta
            .acquire_lease(bucket, &info.file.id, LEASE_TTL)
            .await?;
        // Still there, and still GridFS chunks (a conversion to a content deletes the chunks
        // only after the document points at the content, and only without a lease: a reader
        // that looked the object up before reads the content).
        match self.converted(bucket, info).await {
            Ok(Now::Same) => {}
            other => {
                let _ = self.meta.release_lease(&lease).await;
                return match other? {
                    Now::Content(p) => {
                        Box::pin(self.contents(bucket).read(&p, info.file.length, start, end)).await
                    }
                    _ => Err(GridFsError::FileNotFound),
                };
            }
        }
        let stream = fs.download_sealed(&info.file, sealing.as_ref(), 0, start, end)?;
        let meta = self.meta.clone();
        let renew_lease = lease.clone();
        let renew = crate::background::spawn("lease-heartbeat", async move {
            let mut tick = tokio::time::interval(LEASE_TTL / 3);
            tick.tick().await;
            loop {
                tick.tick().await;
                if let Err(e) = meta.renew_lease(&renew_lease, LEASE_TTL).await {
                    tracing::warn!(error = %e, "could not renew a reader lease");
                }
            }
        });
        let guard = LeaseGuard {
            meta: self.meta.clone(),
            lease,
            renew,
        };
        Ok(Box::pin(stream.map(move |item| {
            let _held = &guard;
            item
        })))
    }
}
