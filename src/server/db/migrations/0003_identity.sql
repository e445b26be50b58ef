-- Identity, second part: links to external sign-in subjects, API key hints, sign-in throttling,
-- phone codes and their outbox, third-party sequence codes, service secrets (key pairs shared by
-- every instance) and the embedded OpenID provider's short-lived records.
alter table users add column if not exists oidc_issuer text;
alter table users add column if not exists oidc_subject text;
create unique index if not exists users_oidc_subject_idx on users (oidc_issuer, oidc_subject);
create unique index if not exists users_username_lower_idx on users (lower(username));
alter table credentials add column if not exists hint text;

-- Fixed-window counters: one row per throttled key (login:u:<name>, login:ip:<addr>, ...).
create table auth_throttle (
  key text primary key,
  count integer not null,
  window_start timestamptz not null
);

create table phone_codes (
  id text primary key,
  phone text not null,
  code_hash text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  consumed_at timestamptz,
  attempts integer not null default 0
);
create index phone_codes_phone_idx on phone_codes (phone, created_at desc);

create table phone_outbox (
  id bigserial primary key,
  at timestamptz not null default now(),
  channel text not null,
  recipient text not null,
  body text not null
);
create index phone_outbox_at_idx on phone_outbox (at desc);

create table sequence_codes (
  code_hash text primary key,
  user_id text not null references users(id) on delete cascade,
  created_by text,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  consumed_at timestamptz
);

create table service_secrets (
  name text primary key,
  value jsonb not null,
  created_at timestamptz not null default now()
);

-- Records of the embedded OpenID provider (sessions, interactions, codes, grants, ...), one table for
-- every model, so that several instances on one database share them.
create table oidc_records (
  model text not null,
  id text not null,
  payload jsonb not null,
  grant_id text,
  user_code text,
  uid text,
  expires_at timestamptz,
  consumed_at timestamptz,
  primary key (model, id)
);
create index oidc_records_grant_idx on oidc_records (grant_id) where grant_id is not null;
create index oidc_records_uid_idx on oidc_records (model, uid) where uid is not null;
create index oidc_records_expires_idx on oidc_records (expires_at);
