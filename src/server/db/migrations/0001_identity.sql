-- Identity: organisations, roles, users, their memberships, credentials (access tokens and API keys,
-- stored only as hashes) and the audit log.
create table organisations (
  id text primary key,
  name text not null,
  type text not null default 'ORG',
  created_at timestamptz not null default now()
);

create table roles (
  id text primary key,
  name text not null,
  perms text[] not null default '{}',
  builtin boolean not null default false,
  created_at timestamptz not null default now()
);

create table users (
  id text primary key,
  username text not null unique,
  display_name text not null default '',
  email text,
  phone text unique,
  password_hash text,
  avatar text,
  is_active boolean not null default true,
  current_org_id text references organisations(id),
  created_at timestamptz not null default now()
);

create table memberships (
  user_id text not null references users(id) on delete cascade,
  org_id text not null references organisations(id) on delete cascade,
  role_id text not null references roles(id),
  primary key (user_id, org_id)
);

create table credentials (
  id text primary key,
  token_hash text not null unique,
  user_id text not null references users(id) on delete cascade,
  kind text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  revoked_reason text,
  last_used_at timestamptz
);
create index credentials_user_idx on credentials (user_id, kind);

create table audit_log (
  id bigserial primary key,
  at timestamptz not null default now(),
  user_id text,
  username text,
  action text not null,
  target text,
  board_id text,
  result text not null,
  ip text,
  detail jsonb
);
create index audit_log_at_idx on audit_log (at desc);
