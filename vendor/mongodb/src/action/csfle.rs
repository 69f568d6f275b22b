//! Action builders for in-use encryption.

mod create_data_key;
mod create_encrypted_collection;
pub(crate) mod encrypt;

pub use create_data_key::{CreateDataKey, DataKeyOptions};
pub use create_encrypted_collection::CreateEncryptedCollection;
pub use encrypt::{Encrypt, EncryptOptions};
