//! Issue 60: the identity store's deletes against the writes that add a reference, raced step
//! by step with fail points. A reference (a member, a key, an attachment) is counted on the
//! entity it names before it is written; a delete is conditional on the count being zero. So
//! a delete that comes between the two is refused (`DeleteConflict`), and nothing is ever left
//! naming an entity that was deleted under it.

use grids3::failpoint;
use grids3::storage::identity::{Account, Holder, IdentityError, NewRole};

use crate::support;

fn conflict<T: std::fmt::Debug>(r: Result<T, IdentityError>, what: &str) {
    assert!(
        matches!(r, Err(IdentityError::DeleteConflict(_))),
        "{what}: {r:?}"
    );
}

#[test]
fn a_delete_between_counting_and_referencing_is_refused() {
    support::run(async {
        let gw = support::gateway("iamrace").await;
        let ids = gw.state.creds.identity().clone();
        let acct = Account::of_key(support::AK);
        ids.create_user(&acct, "ann", "/", &[]).await.unwrap();
        ids.create_group(&acct, "team", "/").await.unwrap();
        let doc = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}"#;
        let pol = ids
            .create_policy(&acct, "Read", "/", None, doc, &[])
            .await
            .unwrap();

        // AddUserToGroup against DeleteGroup.
        let stop = failpoint::pause("identity.member_counted", Some(&acct.id));
        let add = {
            let (ids, acct) = (ids.clone(), acct.clone());
            tokio::spawn(async move { ids.add_user_to_group(&acct, "team", "ann").await })
        };
        stop.reached().await;
        conflict(
            ids.delete_group(&acct, "team").await,
            "DeleteGroup while a member is being added",
        );
        stop.release();
        add.await.unwrap().unwrap();
        let g = ids.group(&acct, "team").await.unwrap();
        assert!(ids.user(&acct, "ann").await.unwrap().groups.contains(&g.id));

        // CreateAccessKey against DeleteUser (ann is in a group: leave it first).
        ids.remove_user_from_group(&acct, "team", "ann")
            .await
            .unwrap();
        let stop = failpoint::pause("identity.key_counted", Some(&acct.id));
        let key = {
            let (ids, acct) = (ids.clone(), acct.clone());
            tokio::spawn(async move { ids.create_user_key(&acct, "ann").await })
        };
        stop.reached().await;
        conflict(
            ids.delete_user(&acct, "ann").await,
            "DeleteUser while a key is being made",
        );
        stop.release();
        let (u, key_id, _, _) = key.await.unwrap().unwrap();
        let keys = ids.user_keys(&u).await.unwrap();
        assert_eq!(
            keys.iter().map(|k| k.id.clone()).collect::<Vec<_>>(),
            [key_id]
        );
        assert_eq!(ids.user(&acct, "ann").await.unwrap().key_count, 1);

        // AttachUserPolicy against DeletePolicy.
        let stop = failpoint::pause("identity.attachment_counted", Some(&acct.id));
        let attach = {
            let (ids, acct, id, arn) = (ids.clone(), acct.clone(), u.id.clone(), pol.arn());
            tokio::spawn(async move { ids.attach(&acct, Holder::User, &id, &arn).await })
        };
        stop.reached().await;
        conflict(
            ids.delete_policy(&acct, &pol.arn()).await,
            "DeletePolicy while it is being attached",
        );
        stop.release();
        attach.await.unwrap().unwrap();
        assert_eq!(ids.user(&acct, "ann").await.unwrap().attached, [pol.arn()]);
        assert_eq!(ids.policy(&acct, &pol.arn()).await.unwrap().attachments, 1);

        // With every reference gone, each delete goes through.
        ids.detach(&acct, Holder::User, &u.id, &pol.arn())
            .await
            .unwrap();
        ids.delete_user_key(&u, &keys[0].id).await.unwrap();
        ids.delete_policy(&acct, &pol.arn()).await.unwrap();
        ids.delete_user(&acct, "ann").await.unwrap();
        ids.delete_group(&acct, "team").await.unwrap();
    });
}

/// AttachRolePolicy against DeleteRole: the attachment is counted on the policy, then the
/// role is deleted (it holds nothing yet, so the delete is right to go through), then the
/// attach finds no role. It must take its count back and say the role is gone, so the policy
/// is not left counting an attachment to nothing (which would make DeletePolicy refuse
/// forever).
#[test]
fn a_role_deleted_while_a_policy_is_attached_leaves_no_count_behind() {
    support::run(async {
        let gw = support::gateway("iamroleace").await;
        let ids = gw.state.creds.identity().clone();
        let acct = Account::of_key(support::AK);
        let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
        let role = ids
            .create_role(
                &acct,
                NewRole {
                    name: "worker",
                    path: "/",
                    trust,
                    description: "",
                    max_session: 3600,
                    tags: &[],
                },
            )
            .await
            .unwrap();
        let doc = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}"#;
        let pol = ids
            .create_policy(&acct, "Read", "/", None, doc, &[])
            .await
            .unwrap();

        let stop = failpoint::pause("identity.attachment_counted", Some(&acct.id));
        let attach = {
            let (ids, acct, id, arn) = (ids.clone(), acct.clone(), role.id.clone(), pol.arn());
            tokio::spawn(async move { ids.attach(&acct, Holder::Role, &id, &arn).await })
        };
        stop.reached().await;
        assert_eq!(ids.policy(&acct, &pol.arn()).await.unwrap().attachments, 1);
        ids.delete_role(&acct, "worker").await.unwrap();
        stop.release();
        let r = attach.await.unwrap();
        assert!(
            matches!(r, Err(IdentityError::NoSuchEntity(_))),
            "AttachRolePolicy to a role deleted under it: {r:?}"
        );
        assert_eq!(ids.policy(&acct, &pol.arn()).await.unwrap().attachments, 0);
        assert!(ids.role(&acct, "worker").await.is_err());
        ids.delete_policy(&acct, &pol.arn()).await.unwrap();
    });
}
