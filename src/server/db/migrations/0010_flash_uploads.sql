-- An upload claims its tag and reserves its owner's quota with its image row before a byte of it is
-- written, so two uploads can never take one tag nor together pass a quota. While `upload_id` is
-- set the row is an upload in flight, not an image: nobody lists, flashes or retires it, but its tag
-- is taken and its `size` (the bytes reserved so far) counts in the owner's quota. `upload_seen_at`
-- is the last sign of life of the service that runs it; a claim that falls silent is swept.
alter table flash_images add column upload_id text;
alter table flash_images add column upload_seen_at timestamptz;
create index flash_images_uploading_idx on flash_images (upload_seen_at) where upload_id is not null;
