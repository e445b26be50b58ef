-- A flash job is run by the instance that took it (issue 37: instances share one database). An
-- instance that starts, or sweeps, fails as interrupted only the jobs of instances no longer alive,
-- so restarting instance A never fails a flash instance B is running. Every instance now keeps a row
-- in service_instances (its URL only when board hosts should dial it).
alter table flash_jobs add column if not exists instance_id text;
alter table service_instances alter column url drop not null;
