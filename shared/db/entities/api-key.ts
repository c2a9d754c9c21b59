import { Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';
import { User } from './user';

/** An API key; the secret is shown once and only its SHA-256 is kept. */
@Entity('api_keys')
export class ApiKey {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @Index('ix_api_keys_user')
  @IntColumn('user_id')
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @StringColumn('name', 100)
  name!: string;

  @StringColumn('key_hash', 64, { unique: true })
  keyHash!: string;

  /** The first characters of the key (service prefix included), to recognise it in a list. */
  @StringColumn('prefix', 12)
  prefix!: string;

  @StringColumn('last_four', 4)
  lastFour!: string;

  @TimestampColumn('created_at')
  createdAt!: Date;

  @TimestampColumn('last_used_at', { nullable: true })
  lastUsedAt!: Date | null;
}
