import { Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { IntColumn, StringColumn, TimestampColumn } from '../columns';
import { User } from './user';

/** A user's installed marketplace assistant, with the user's rating of it (1–5) if any. */
@Entity('assistant_installs')
@Index('uq_assistant_installs_user_assistant', ['userId', 'assistantId'], { unique: true })
@Index('ix_assistant_installs_assistant', ['assistantId'])
export class AssistantInstall {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @IntColumn('user_id')
  userId!: number;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @StringColumn('assistant_id', 64)
  assistantId!: string;

  @IntColumn('rating', { nullable: true })
  rating!: number | null;

  @TimestampColumn('created_at')
  createdAt!: Date;
}
